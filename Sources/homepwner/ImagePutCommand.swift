import CLISupport
import Digest
import Foundation
import Proto
import RPC
import Runtime

/// `homepwner image put FILE...`: one PutImage for small files, a chunked upload for large ones,
/// with a progress bar; several files go four at a time.
enum ImagePutCommand {
    /// Files above this go through BeginUpload/AppendUpload/CommitUpload.
    static let chunkedAbove = 8 << 20
    /// Files of a several-file put in flight at once.
    static let filesInFlight = 4

    static let parser = OptionParser(
        command: "image put",
        summary: "Stores photos (JPEG, PNG, HEIC), videos (MP4/MOV, Matroska/WebM, AVI) or PDF documents; several files go four at a time, each its own image.",
        usage: "homepwner image put FILE... [--owner KEY] [--kind original|edited|thumbnail] [--parent KEY] [--key UUID]",
        options: CommonOptions.endpoints + [
            OptionSpec(name: "owner", help: "the owner (an item key)", valueName: "KEY"),
            OptionSpec(name: "kind", help: "original (default), edited or thumbnail", valueName: "KIND"),
            OptionSpec(name: "parent", help: "the original an edited image or thumbnail was made from", valueName: "KEY"),
            OptionSpec(name: "key", help: "a UUID of your choosing (one FILE only): putting it again returns the first image", valueName: "UUID"),
            OptionSpec(name: "content-type", help: "e.g. image/jpeg (default: recognised from the data)", valueName: "TYPE"),
            OptionSpec(name: "chunked", help: "always use a chunked upload", isFlag: true),
            OptionSpec(
                name: "no-resume",
                help: "begin a chunked upload anew instead of resuming one this file left unfinished (a run after an interruption resumes it from the bytes the service holds; the upload id is kept in $XDG_CACHE_HOME/homepwner/uploads/, else ~/.cache/homepwner/uploads/)",
                isFlag: true),
            OptionSpec(name: "no-progress", help: "no progress bar on stderr", isFlag: true),
        ],
        allowsPositionals: true)

    /// What a put needs besides the file.
    struct Settings: Sendable {
        var owner = "", parent = "", contentType = ""
        var kind = ImageKind.original
        var chunked = false
        var timeout: UInt32 = 10_000
        /// Resume a chunked upload the file left unfinished (not with `--no-resume`).
        var resume = true
        /// The image service endpoint, which keys the resume state.
        var endpoint = ""
    }

    static func run(_ arguments: [String]) async -> Int32 {
        guard let options = HomepwnerCLI.parse(parser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        let paths = options.positionals
        guard !paths.isEmpty else { return ItemCommand.usageError("image put", "give a FILE (or several)") }
        var settings = Settings()
        var sizes: [Int] = []
        do {
            settings.kind = try options["kind"].map(ImageCommand.parseKind) ?? .original
            settings.owner = options["owner"] ?? ""
            settings.parent = options["parent"] ?? ""
            settings.contentType = options["content-type"] ?? ""
            settings.chunked = options.bool("chunked")
            settings.resume = !options.bool("no-resume")
            settings.endpoint = (try? options.string("image")) ?? ""
            guard paths.count == 1 || options["key"] == nil else {
                throw OptionError.invalidValue(option: "--key", value: options["key"]!, reason: "names one image: give one FILE with it")
            }
            // Every file is checked before anything is sent.
            for path in paths { sizes.append(try fileSize(path)) }
        } catch {
            return ItemCommand.usageError("image put", "\(error)")
        }
        if paths.count > 1 { return await putMany(paths, sizes: sizes, settings: settings, options: options) }
        // A key chosen here makes every retry of this put return the same image.
        let key = options["key"] ?? UUID().uuidString.lowercased()
        return await ImageCommand.withClient(options) { client, timeout in
            settings.timeout = timeout
            let progress = ProgressBar(total: sizes[0], enabled: !options.bool("no-progress") && isChunked(sizes[0], settings))
            let info = try await put(paths[0], size: sizes[0], key: key, settings, client: client) { progress.update($0) }
            progress.finish()
            print(options.bool("json") ? try ImageCommand.infoJSON(info) : ImageCommand.describe(info))
        }
    }

    /// The size of a regular file that can be read; a usage error naming the problem otherwise.
    static func fileSize(_ path: String) throws -> Int {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else {
            throw OptionError.invalidValue(option: "FILE", value: path, reason: "no such file")
        }
        guard !isFolder.boolValue else {
            throw OptionError.invalidValue(option: "FILE", value: path, reason: "is a folder: give the files in it (e.g. '\(path)'/*.jpg)")
        }
        guard FileManager.default.isReadableFile(atPath: path),
              let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber
        else {
            throw OptionError.invalidValue(option: "FILE", value: path, reason: "cannot be read")
        }
        return size.intValue
    }

    static func isChunked(_ size: Int, _ settings: Settings) -> Bool { size > chunkedAbove || settings.chunked }

    /// Stores one file as image `key`; `progress` gets the bytes sent so far.
    static func put(
        _ path: String, size: Int, key: String, _ settings: Settings, client: RPCClient, progress: (Int) -> Void
    ) async throws -> ImageInfo {
        if isChunked(size, settings) {
            return try await upload(path, size: size, key: key, settings, client: client, progress: progress)
        }
        var request = PutImageRequest()
        request.data = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        request.ownerKey = settings.owner
        request.kind = settings.kind
        request.parentKey = settings.parent
        request.key = key
        request.contentType = settings.contentType
        let info = try await client.call(
            ImageServiceRPC.putImage, request,
            options: .init(timeoutMilliseconds: max(settings.timeout, 60_000), idempotencyKey: UUID().uuidString.lowercased()))
        progress(size)
        return info
    }

    /// Several files, `filesInFlight` at a time, one progress bar over all their bytes. Every
    /// file is tried; the exit code is that of the first failure in the order given.
    static func putMany(_ paths: [String], sizes: [Int], settings: Settings, options: ParsedOptions) async -> Int32 {
        var outcomes: [Result<ImageInfo, any Error>] = []
        let started = Date()
        let code = await ImageCommand.withClient(options) { client, timeout in
            var settings = settings
            settings.timeout = timeout
            let bar = ProgressBar(total: sizes.reduce(0, +), enabled: !options.bool("no-progress"))
            let sent = SentBytes(bar)
            outcomes = await withTaskGroup(of: (Int, Result<ImageInfo, any Error>).self) { group in
                var results = [Result<ImageInfo, any Error>?](repeating: nil, count: paths.count)
                var next = 0
                func start(_ index: Int) {
                    group.addTask { [settings] in
                        var counted = 0
                        do {
                            let info = try await put(
                                paths[index], size: sizes[index], key: UUID().uuidString.lowercased(), settings, client: client
                            ) { done in
                                sent.add(done - counted)
                                counted = done
                            }
                            return (index, .success(info))
                        } catch {
                            sent.add(sizes[index] - counted)  // the bar counts the file as done either way
                            return (index, .failure(error))
                        }
                    }
                }
                while next < min(filesInFlight, paths.count) {
                    start(next)
                    next += 1
                }
                for await (index, result) in group {
                    results[index] = result
                    if next < paths.count {
                        start(next)
                        next += 1
                    }
                }
                return results.map { $0! }
            }
            bar.finish()
        }
        guard code == ExitCode.ok else { return code }  // no connection or bad options: said already
        let json = options.bool("json")
        if json {
            let entries = try? zip(paths, outcomes).map { path, outcome -> String in
                switch outcome {
                case .success(let info): return "{\"file\": \(jsonString(path)), \"image\": \(try ImageCommand.infoJSON(info))}"
                case .failure(let error):
                    return "{\"file\": \(jsonString(path)), \"error\": \(errorJSON(error as? RPCError ?? RPCError.internal("\(error)")))}"
                }
            }
            print("[" + (entries ?? []).joined(separator: ",\n") + "]")
        }
        var rows = [["FILE", "KEY", "TYPE", "SIZE", "PIXELS"]]
        var stored = 0, storedBytes: Int64 = 0
        var firstFailure: Int32?
        for (path, outcome) in zip(paths, outcomes) {
            switch outcome {
            case .success(let info):
                stored += 1
                storedBytes += info.sizeBytes
                rows.append([path, info.key, info.contentType, ImageCommand.byteCount(info.sizeBytes),
                             info.width > 0 ? "\(info.width)×\(info.height)" : "-"])
            case .failure(let error):
                if !json { printError("homepwner image put: \(path): \(error)") }
                let status = (error as? RPCError)?.code
                firstFailure = firstFailure ?? status.map(ExitCode.forStatus) ?? ExitCode.failure
            }
        }
        if !json {
            if stored > 0 { printColumns(rows) }
            let seconds = Date().timeIntervalSince(started)
            print(String(format: "stored %d of %d files, %@ in %.1f s", stored, paths.count, ImageCommand.byteCount(storedBytes), seconds))
        }
        return firstFailure ?? ExitCode.ok
    }

    /// Bytes sent by the puts in flight, drawn on one progress bar.
    final class SentBytes: @unchecked Sendable {
        private let lock = NSLock()
        private var total = 0
        private let bar: ProgressBar

        init(_ bar: ProgressBar) { self.bar = bar }

        func add(_ bytes: Int) {
            lock.lock()
            defer { lock.unlock() }
            total += bytes
            bar.update(total)
        }
    }

    /// A chunked upload of one file as image `key`; `progress` gets the bytes sent so far.
    static func upload(
        _ path: String, size: Int, key: String, _ settings: Settings, client: RPCClient, progress: (Int) -> Void
    ) async throws -> ImageInfo {
        guard let file = FileHandle(forReadingAtPath: path) else {
            throw RPCError.invalidArgument("\(path) cannot be read")
        }
        defer { try? file.close() }
        let timeout = settings.timeout
        // With --no-resume the state is not read, but the new upload replaces it (and resumes later).
        let state = UploadResumeState(file: path, size: size, endpoint: settings.endpoint)
        var ticket = BeginUploadResponse()
        var resumed = false
        if settings.resume, let state, let saved = state.load() {
            var resume = BeginUploadRequest()
            resume.resumeUploadId = saved
            do {
                ticket = try await client.call(
                    ImageServiceRPC.beginUpload, resume,
                    options: .init(timeoutMilliseconds: timeout, idempotencyKey: UUID().uuidString.lowercased()))
            } catch {
                // Committed, aborted or expired meanwhile: begin anew.
                guard error.code == .notFound else { throw error }
                state.remove()
            }
            if !ticket.uploadId.isEmpty && !(0..<Int64(size)).contains(ticket.receivedBytes) {
                // Not this file's upload after all (or complete already): begin anew.
                state.remove()
                ticket = BeginUploadResponse()
            }
            resumed = !ticket.uploadId.isEmpty
        }
        if ticket.uploadId.isEmpty {
            var begin = BeginUploadRequest()
            begin.ownerKey = settings.owner
            begin.totalSize = Int64(size)
            begin.kind = settings.kind
            begin.parentKey = settings.parent
            begin.key = key
            begin.contentType = settings.contentType
            ticket = try await client.call(
                ImageServiceRPC.beginUpload, begin,
                options: .init(timeoutMilliseconds: timeout, idempotencyKey: UUID().uuidString.lowercased()))
            state?.save(ticket.uploadId)
        }
        let chunk = max(1 << 20, Int(ticket.maxChunkBytes))
        var hash = SHA256()
        var offset = Int(ticket.receivedBytes)
        if resumed { printError("resuming upload \(ticket.uploadId) at \(offset) of \(size) bytes") }
        if offset > 0 {
            // The checksum sent at commit covers the bytes sent by the earlier run too.
            var hashed = 0
            while hashed < offset {
                let piece = [UInt8](try file.read(upToCount: min(chunk, offset - hashed)) ?? Data())
                guard !piece.isEmpty else { throw RPCError.dataLoss("\(path) ended at \(hashed) of \(size) bytes while uploading") }
                hash.update(piece)
                hashed += piece.count
            }
            progress(offset)
        }
        func readChunk(at offset: Int) throws -> [UInt8] {
            let data = [UInt8](try file.read(upToCount: chunk) ?? Data())
            guard !data.isEmpty else { throw RPCError.dataLoss("\(path) ended at \(offset) of \(size) bytes while uploading") }
            return data
        }
        var data = try readChunk(at: offset)
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
            do {
                _ = try await appended
            } catch {
                if (error as? RPCError)?.code == .notFound { state?.remove() }
                throw error
            }
            offset = end
            progress(offset)
            guard let next else { break }
            data = next
        }
        var commit = CommitUploadRequest()
        commit.uploadId = ticket.uploadId
        commit.checksum = hash.checksum()
        do {
            let info = try await client.call(
                ImageServiceRPC.commitUpload, commit,
                options: .init(timeoutMilliseconds: max(timeout, 120_000), idempotencyKey: UUID().uuidString.lowercased()))
            state?.remove()
            return info
        } catch {
            // These end the upload (discarded or gone); others leave it to be committed again.
            if [.notFound, .invalidArgument, .alreadyExists].contains(error.code) {
                state?.remove()
            }
            throw error
        }
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
        let seconds = max(0.001, Date().timeIntervalSince(start))
        let rate = ImageCommand.byteCount(Int64(Double(done) / seconds))
        let line = "\r" + ProgressText.bar(fraction: fraction) + " "
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
