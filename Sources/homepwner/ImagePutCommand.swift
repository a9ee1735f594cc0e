import Digest
import Foundation
import ImageService
import Proto
import RPC
import Runtime

/// `homepwner image put FILE`: one PutImage for small files, a chunked upload with a progress bar for large ones.
enum ImagePutCommand {
    /// Files above this go through BeginUpload/AppendUpload/CommitUpload.
    static let chunkedAbove = 8 << 20

    static let parser = OptionParser(
        command: "image put", summary: "Stores a JPEG photo or a video (MP4/MOV, Matroska/WebM, AVI).",
        usage: "homepwner image put FILE [--owner KEY] [--kind original|edited|thumbnail] [--parent KEY] [--key UUID]",
        options: CommonOptions.endpoints + [
            OptionSpec(name: "owner", help: "the owner (an item key)", valueName: "KEY"),
            OptionSpec(name: "kind", help: "original (default), edited or thumbnail", valueName: "KIND"),
            OptionSpec(name: "parent", help: "the original an edited image or thumbnail was made from", valueName: "KEY"),
            OptionSpec(name: "key", help: "a UUID of your choosing: putting it again returns the first image", valueName: "UUID"),
            OptionSpec(name: "content-type", help: "e.g. image/jpeg (default: recognised from the data)", valueName: "TYPE"),
            OptionSpec(name: "chunked", help: "always use a chunked upload", isFlag: true),
            OptionSpec(name: "no-progress", help: "no progress bar on stderr", isFlag: true),
        ],
        allowsPositionals: true)

    static func run(_ arguments: [String]) async -> Int32 {
        guard let options = HomepwnerCLI.parse(parser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        guard options.positionals.count == 1 else { return ItemCommand.usageError("image put", "give exactly one FILE") }
        let path = options.positionals[0]
        let kind: ImageKind
        let size: Int
        do {
            kind = try options["kind"].map(ImageCommand.parseKind) ?? .original
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
                  let fileSize = (attributes[.size] as? NSNumber)?.intValue
            else {
                throw OptionError.invalidValue(option: "FILE", value: path, reason: "cannot be read")
            }
            size = fileSize
        } catch {
            return ItemCommand.usageError("image put", "\(error)")
        }
        // A key chosen here makes every retry of this put return the same image.
        let key = options["key"] ?? UUID().uuidString.lowercased()
        return await ImageCommand.withClient(options) { client, timeout in
            let info: ImageInfo
            if size > chunkedAbove || options.bool("chunked") {
                info = try await upload(
                    path, size: size, key: key, kind: kind, options: options, client: client, timeout: timeout)
            } else {
                var request = PutImageRequest()
                request.data = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
                request.ownerKey = options["owner"] ?? ""
                request.kind = kind
                request.parentKey = options["parent"] ?? ""
                request.key = key
                request.contentType = options["content-type"] ?? ""
                info = try await client.call(
                    ImageServiceRPC.putImage, request,
                    options: .init(timeoutMilliseconds: max(timeout, 60_000), idempotencyKey: UUID().uuidString.lowercased()))
            }
            print(options.bool("json") ? try ImageCommand.infoJSON(info) : ImageCommand.describe(info))
        }
    }

    static func upload(
        _ path: String, size: Int, key: String, kind: ImageKind, options: ParsedOptions, client: RPCClient, timeout: UInt32
    ) async throws -> ImageInfo {
        guard let file = FileHandle(forReadingAtPath: path) else {
            throw RPCError.invalidArgument("\(path) cannot be read")
        }
        defer { try? file.close() }
        var begin = BeginUploadRequest()
        begin.ownerKey = options["owner"] ?? ""
        begin.totalSize = Int64(size)
        begin.kind = kind
        begin.parentKey = options["parent"] ?? ""
        begin.key = key
        begin.contentType = options["content-type"] ?? ""
        let ticket = try await client.call(
            ImageServiceRPC.beginUpload, begin,
            options: .init(timeoutMilliseconds: timeout, idempotencyKey: UUID().uuidString.lowercased()))
        let chunk = max(1 << 20, Int(ticket.maxChunkBytes))
        let progress = ProgressBar(total: size, enabled: !options.bool("no-progress"))
        var hash = SHA256()
        var offset = 0
        func readChunk(at offset: Int) throws -> [UInt8] {
            let data = [UInt8](try file.read(upToCount: chunk) ?? Data())
            guard !data.isEmpty else { throw RPCError.dataLoss("\(path) ended at \(offset) of \(size) bytes while uploading") }
            return data
        }
        var data = try readChunk(at: 0)
        while true {
            var append = AppendUploadRequest()
            append.uploadId = ticket.uploadId
            append.offset = Int64(offset)
            append.data = data
            let options = CallOptions(timeoutMilliseconds: max(timeout, 60_000), idempotencyKey: UUID().uuidString.lowercased())
            // While this chunk travels and is written, hash it and read the next one.
            async let appended = client.call(ImageServiceRPC.appendUpload, append, options: options)
            hash.update(data)
            let end = offset + data.count
            let next = end < size ? try readChunk(at: end) : nil
            _ = try await appended
            offset = end
            progress.update(offset)
            guard let next else { break }
            data = next
        }
        progress.finish()
        var commit = CommitUploadRequest()
        commit.uploadId = ticket.uploadId
        commit.checksum = hash.checksum()
        return try await client.call(
            ImageServiceRPC.commitUpload, commit,
            options: .init(timeoutMilliseconds: max(timeout, 120_000), idempotencyKey: UUID().uuidString.lowercased()))
    }
}

/// "[#########...........]  45%  90.0 MB / 200.0 MB  85.3 MB/s" on stderr, redrawn in place.
final class ProgressBar {
    let total: Int
    let enabled: Bool
    let start = Date()
    private var lastDraw = Date.distantPast

    init(total: Int, enabled: Bool) {
        self.total = total
        self.enabled = enabled
    }

    func update(_ done: Int, force: Bool = false) {
        guard enabled, force || Date().timeIntervalSince(lastDraw) > 0.1 else { return }
        lastDraw = Date()
        let fraction = total == 0 ? 1 : Double(done) / Double(total)
        let width = 30
        let filled = Int(fraction * Double(width))
        let seconds = max(0.001, Date().timeIntervalSince(start))
        let rate = ImageCommand.byteCount(Int64(Double(done) / seconds))
        let line = "\r[" + String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled) + "] "
            + String(format: "%3d%%  ", Int(fraction * 100))
            + "\(ImageCommand.byteCount(Int64(done))) / \(ImageCommand.byteCount(Int64(total)))  \(rate)/s"
        FileHandle.standardError.write(Data(line.utf8))
    }

    func finish() {
        guard enabled else { return }
        update(total, force: true)
        FileHandle.standardError.write(Data("\n".utf8))
    }
}
