import Digest
import Foundation
import Proto
import RPC
import Runtime

/// `homepwner image get KEY -o FILE [--range A-B]`: whole (checksum verified here too) or a byte range.
enum ImageGetCommand {
    /// Bytes per GetImage call, well under the frame limit.
    static let step: Int64 = 16 << 20

    static let parser = OptionParser(
        command: "image get", summary: "Writes an image's bytes, or a byte range of them, to a file ('-' = stdout).",
        usage: "homepwner image get KEY -o FILE [--range A-B]",
        options: CommonOptions.endpoints + [
            OptionSpec(name: "output", help: "where to write ('-o' for short; '-' = stdout)", valueName: "FILE"),
            OptionSpec(name: "range", help: "bytes A through B inclusive, or A- to the end", valueName: "A-B"),
        ],
        allowsPositionals: true)

    static func run(_ arguments: [String]) async -> Int32 {
        guard let options = HomepwnerCLI.parse(parser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        guard options.positionals.count == 1 else { return ItemCommand.usageError("image get", "give exactly one KEY") }
        guard let output = options["output"] else { return ItemCommand.usageError("image get", "-o FILE is required") }
        var range: (offset: Int64, last: Int64?)?
        if let text = options["range"] {
            guard let parsed = parseRange(text) else {
                return ItemCommand.usageError("image get", "--range \(text): expected A-B (A ≤ B) or A-, in bytes")
            }
            range = parsed
        }
        let key = options.positionals[0]
        return await ImageCommand.withClient(options) { client, timeout in
            var stat = StatImageRequest()
            stat.key = key
            let info = try await client.call(ImageServiceRPC.statImage, stat, options: .init(timeoutMilliseconds: timeout))
            let start = range?.offset ?? 0
            let end = range?.last.map { $0 + 1 } ?? info.sizeBytes
            let position = try await OutputFile.writing(to: output) { file -> Int64 in
                var hash = SHA256()
                var position = start
                /// The bytes at `offset`, where the reply's frame holds them.
                @Sendable func fetch(_ offset: Int64) async throws -> FrameBytes {
                    var request = GetImageRequest()
                    request.key = info.key
                    request.offset = offset
                    request.length = max(1, min(step, end - offset))
                    let (reply, data) = try await client.call(
                        ImageServiceRPC.getImage, request, largeBytesField: GetImageResponse.dataField,
                        options: .init(timeoutMilliseconds: max(timeout, 60_000)))
                    return data ?? FrameBytes(reply.data)
                }
                var part = try await fetch(position)
                while true {
                    guard !part.isEmpty else { throw RPCError.dataLoss("the service sent no bytes at offset \(position)") }
                    let next = position + Int64(part.count)
                    // While this range is hashed and written, the next one is on its way.
                    async let following = next < end ? fetch(next) : FrameBytes([])
                    part.withUnsafeBytes { hash.update($0) }
                    try file.write(part)
                    position = next
                    let fetched = try await following
                    guard position < end else { break }
                    part = fetched
                }
                if range == nil, hash.checksum() != info.checksum {
                    throw RPCError.dataLoss("received bytes hash to \(hash.checksum()), not the stored \(info.checksum)")
                }
                return position
            }
            let written = position - start
            if options.bool("json") {
                print("{\"key\": \(jsonString(info.key)), \"offset\": \(start), \"bytes\": \(written), \"output\": \(jsonString(output))}")
            } else if output != "-" {
                print("wrote \(written) bytes of \(info.key) to \(output)")
            }
        }
    }

    /// "A-B" (inclusive) or "A-".
    static func parseRange(_ text: String) -> (offset: Int64, last: Int64?)? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let first = Int64(parts[0]), first >= 0 else { return nil }
        if parts[1].isEmpty { return (first, nil) }
        guard let last = Int64(parts[1]), last >= first else { return nil }
        return (first, last)
    }
}
