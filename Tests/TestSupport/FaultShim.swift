import Foundation
import Locking

/// The disk-fault shim (`Tests/FaultShim/faultshim.c`), built once per test process with the C
/// compiler beside the Swift toolchain, and the rules file a test writes to make a process's
/// disk fail at the moment it chooses (see the C file for the rule format).
public enum FaultShim {
    /// `Tests/FaultShim/faultshim.c`.
    static let source = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("FaultShim/faultshim.c").path

    private static let built = Locked<Result<String, FaultShimError>?>(nil)

    /// The path of the built library (LD_PRELOAD); builds it the first time.
    public static func library() throws -> String {
        try built.withLock { built in
            if built == nil {
                do {
                    built = .success(try build())
                } catch {
                    built = .failure(error as? FaultShimError ?? FaultShimError(description: "\(error)"))
                }
            }
            return try built!.get()
        }
    }

    private static func build() throws(FaultShimError) -> String {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("faultshim-\(getpid())").path
        try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let output = folder + "/faultshim.so"
        // gcc where Debian's is installed (ops/setup), else the clang that comes with Swift.
        let compilers = ["/usr/bin/cc", "/usr/bin/gcc"] + (ProcessInfo.processInfo.environment["PATH"] ?? "")
            .split(separator: ":").map { "\($0)/clang" }
        guard let compiler = compilers.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw FaultShimError(description: "no C compiler (cc, gcc or clang) to build \(source); run ops/setup")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: compiler)
        process.arguments = ["-shared", "-fPIC", "-O2", "-o", output, source, "-ldl", "-lpthread"]
        let errors = Pipe()
        process.standardError = errors
        do {
            try process.run()
        } catch {
            throw FaultShimError(description: "\(compiler): \(error)")
        }
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw FaultShimError(description: "\(compiler) failed to build \(source): \(text)")
        }
        return output
    }

    /// A rules file a process started with `environment(rules:)` reads.
    public final class Rules: Sendable {
        public let path: String

        public init(in folder: String) {
            path = folder + "/faults.rules"
        }

        /// Replaces the rules (atomically: the shim never reads half a file); [] fails nothing.
        public func set(_ rules: [String]) throws {
            let temporary = path + ".new"
            try Data((rules.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: temporary))
            guard rename(temporary, path) == 0 else { throw FaultShimError(description: "rename \(temporary): errno \(errno)") }
        }
    }

    /// The environment of a process whose disk faults follow `rules`.
    public static func environment(rules: Rules) throws -> [String: String] {
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("HOMEPWNER_") }
        environment["LD_PRELOAD"] = try library()
        environment["HOMEPWNER_FAULTS_FILE"] = rules.path
        return environment
    }
}

public struct FaultShimError: Error, CustomStringConvertible, Sendable {
    public let description: String
}
