import Foundation
import RPC

/// Where a command writes bytes it fetched: a file that appears whole or not at all (written
/// to `<output>.part-XXXXXXXX`, renamed over `output` once complete), or stdout for "-".
final class OutputFile {
    private let output: String
    private let temporary: String?
    private let handle: FileHandle

    private init(_ output: String) throws {
        self.output = output
        temporary = output == "-" ? nil : output + ".part-\(UUID().uuidString.prefix(8))"
        if let temporary, !FileManager.default.createFile(atPath: temporary, contents: nil) {
            throw RPCError.invalidArgument("cannot create \(temporary) to write \(output) (is its folder there and writable?)")
        }
        guard let handle = temporary.map({ FileHandle(forWritingAtPath: $0) }) ?? FileHandle.standardOutput else {
            throw RPCError.invalidArgument("cannot write \(output)")
        }
        self.handle = handle
    }

    func write(_ bytes: [UInt8]) throws { try handle.write(contentsOf: bytes) }

    func write(_ bytes: FrameBytes) throws { try bytes.withUnsafeBytes { try handle.write(contentsOf: $0) } }

    /// Runs `body` with the file to write, then puts it in place; when `body` fails, nothing
    /// is left behind.
    static func writing<T>(to output: String, _ body: (OutputFile) async throws -> T) async throws -> T {
        let file = try OutputFile(output)
        do {
            let result = try await body(file)
            if let temporary = file.temporary {
                try file.handle.close()
                _ = try? FileManager.default.removeItem(atPath: output)
                try FileManager.default.moveItem(atPath: temporary, toPath: output)
            }
            return result
        } catch {
            if let temporary = file.temporary {
                try? file.handle.close()
                try? FileManager.default.removeItem(atPath: temporary)
            }
            throw error
        }
    }
}
