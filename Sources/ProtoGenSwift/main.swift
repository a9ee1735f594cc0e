// proto-gen-swift: writes the Swift message layer (Sources/Proto/Generated) from the
// protoc-c descriptors compiled into HomepwnerProtoC, and the method options from the
// FileDescriptorSet protoc-c wrote beside them (the C descriptors do not carry options). Run by
// ops/gen-proto, never by hand. Both come from the .proto files, so the Swift types cannot
// drift from them.
import CProtobufC
import HomepwnerProtoC

#if canImport(Glibc)
import Glibc
#endif

func printError(_ line: String) {
    // Unbuffered write to fd 2; the stdio stderr global is not concurrency-safe in Swift 6.
    let text = line + "\n"
    _ = text.withCString { write(2, $0, strlen($0)) }
}

guard CommandLine.arguments.count == 3 else {
    printError("usage: proto-gen-swift OUTPUT_DIR DESCRIPTOR_SET (run by ops/gen-proto)")
    exit(2)
}
let outputDirectory = CommandLine.arguments[1]

do {
    var generator = SwiftGenerator(methodOptions: try MethodOptions(contentsOf: CommandLine.arguments[2]))
    generator.collect()
    for (name, text) in try generator.files() {
        let path = outputDirectory + "/" + name
        if let slash = name.lastIndex(of: "/") {
            mkdir(outputDirectory + "/" + name[..<slash], 0o755)
        }
        guard let file = fopen(path, "w") else {
            printError("proto-gen-swift: cannot write \(path)")
            exit(1)
        }
        fputs(text, file)
        fclose(file)
    }
} catch {
    printError("proto-gen-swift: \(error)")
    exit(1)
}
