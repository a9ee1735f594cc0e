#if canImport(Glibc)
import Glibc
#endif
import FuzzTargets
import Foundation

/// A line on stderr.
func complain(_ text: String) {
    FileHandle.standardError.write(Data("homepwner-fuzz: \(text)\n".utf8))
}

#if HOMEPWNER_LIBFUZZER
// Built by ops/fuzz with -sanitize=fuzzer,address: libFuzzer's main runs the target that
// HOMEPWNER_FUZZ_TARGET names, and reports each violation as a crash (a file it keeps).

/// The target of this run, set before the first input.
nonisolated(unsafe) private var selected: FuzzTarget?

@_cdecl("LLVMFuzzerInitialize")
public func fuzzerInitialize(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> CInt {
    let name = ProcessInfo.processInfo.environment["HOMEPWNER_FUZZ_TARGET"] ?? ""
    if name == "list" {
        // For ops/fuzz: each target's name, -max_len and what it reaches.
        for target in FuzzTarget.all { print("\(target.name) \(target.maxLength) \(target.summary)") }
        exit(0)
    }
    guard let target = FuzzTarget.named(name) else {
        complain("HOMEPWNER_FUZZ_TARGET=\"\(name)\" is not a target; targets: \(FuzzTarget.all.map(\.name).joined(separator: ", "))")
        exit(2)
    }
    selected = target
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let outcome = selected!.run(UnsafeRawBufferPointer(start: data, count: size))
    if !outcome.violations.isEmpty {
        complain("\(selected!.name): \(outcome.violations.joined(separator: "\n"))")
        abort()
    }
    return 0
}
#else
/// Without libFuzzer: runs files through a target and prints what the product answered, to
/// look at a crash file or a corpus entry (`homepwner-fuzz TARGET FILE...`), or lists the targets.
@main
struct FuzzDriver {
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        guard let name = arguments.first, name != "-h", name != "--help", name != "--list" else {
            print("""
                usage: homepwner-fuzz TARGET FILE...   runs each file through TARGET and prints its answers
                       homepwner-fuzz --list            the targets, their -max_len, what they reach
                       homepwner-fuzz --write-seeds CORPUS FIXTURES
                                                        writes every target's seeds (CORPUS/TARGET/seed-*),
                                                        made from the product's encoders and FIXTURES (Tests/Fixtures)
                ops/fuzz builds this with libFuzzer and runs the targets (ops/fuzz --help).
                """)
            if arguments.first == "--list" {
                for target in FuzzTarget.all { print("\(target.name)\t\(target.maxLength)\t\(target.summary)") }
            }
            exit(arguments.isEmpty ? 2 : 0)
        }
        if name == "--write-seeds" {
            guard arguments.count == 3 else {
                complain("--write-seeds needs CORPUS and FIXTURES")
                exit(2)
            }
            writeSeeds(corpus: URL(fileURLWithPath: arguments[1]), fixtures: URL(fileURLWithPath: arguments[2]))
            return
        }
        guard let target = FuzzTarget.named(name) else {
            complain("no target \"\(name)\"; targets: \(FuzzTarget.all.map(\.name).joined(separator: ", "))")
            exit(2)
        }
        var broken = false
        for file in arguments.dropFirst() {
            guard let data = FileManager.default.contents(atPath: file) else {
                complain("cannot read \(file)")
                exit(1)
            }
            let outcome = target.run([UInt8](data))
            print("\(file):")
            for answer in outcome.answers { print("  \(answer)") }
            for violation in outcome.violations { print("  VIOLATION: \(violation)") }
            broken = broken || !outcome.violations.isEmpty
        }
        exit(broken ? 1 : 0)
    }

    /// Replaces every target's seed files with the ones `FuzzSeeds` makes; regressions and
    /// other files stay.
    static func writeSeeds(corpus: URL, fixtures: URL) {
        do {
            let seeds = try FuzzSeeds.all(fixtures: fixtures)
            let files = FileManager.default
            for target in FuzzTarget.all {
                let folder = corpus.appendingPathComponent(target.name)
                try files.createDirectory(at: folder, withIntermediateDirectories: true)
                for old in try files.contentsOfDirectory(atPath: folder.path) where old.hasPrefix("seed-") {
                    try files.removeItem(at: folder.appendingPathComponent(old))
                }
            }
            for seed in seeds {
                try Data(seed.bytes).write(to: corpus.appendingPathComponent(seed.target).appendingPathComponent(seed.name))
            }
            print("\(seeds.count) seeds written to \(corpus.path)")
        } catch {
            complain("writing seeds: \(error)")
            exit(1)
        }
    }
}
#endif
