import CLISupport
import Capture
import Foundation
import Proto
import RPC
import Runtime
import ZMQ

/// `homepwner capture ITEM …`, `capture sources`, `capture status JOB`: photos and movies into
/// an item through the capture queue (CaptureService on item-service, done by capture workers).
enum CaptureCommand {
    static let overview = """
        OVERVIEW: Capture photos and movies into an item, from a file, the photo library or the camera.

        USAGE:
          homepwner capture ITEM (--file F | --library REL | --recent | --camera) [--crop X,Y,W,H] [--zoom Z]
                                 [--square | --circle] [--size N] [--primary] [--wait]
          homepwner capture sources
          homepwner capture status JOB [--wait]
          homepwner capture save IMAGE [--album A]

        A capture is a job: a capture worker obtains the photo, checks it, stores the original
        untouched and the edit (if any) as a second image, and attaches both to the item. --wait
        follows the job until it is done. A file over \(CaptureSources.maxInlineBytes >> 20) MiB goes up to the image service
        first, in chunks, with a progress bar; run again after an interruption, it goes on where it stopped. Every subcommand takes --item, --image, --timeout and --json.
        Exit codes: 0 ok, 2 usage, 3 invalid input or a source not configured, 4 item or file not found,
        5 unavailable, 7 the capture job failed for another reason.
        """

    static let captureParser = OptionParser(
        command: "capture",
        summary: "Captures a photo or movie into an item: from a file, the photo library, its newest photo, or the camera.",
        usage: "homepwner capture ITEM (--file F | --library REL | --recent | --camera) [--crop X,Y,W,H] [--zoom Z] [--square | --circle] [--size N] [--primary] [--wait]",
        options: CommonOptions.endpoints + [
            OptionSpec(name: "file", help: "a JPEG or movie file here, sent to the service", valueName: "FILE"),
            OptionSpec(name: "library", help: "a file of the photo library, by its path inside it", valueName: "REL"),
            OptionSpec(name: "recent", help: "the newest photo of the library's \"\(CaptureSources.recentFolder)\" folder", isFlag: true),
            OptionSpec(name: "camera", help: "a photo from the configured camera command", isFlag: true),
            OptionSpec(name: "crop", help: "crop rectangle in pixels of the upright photo", valueName: "X,Y,W,H"),
            OptionSpec(name: "zoom", help: "zoom around the crop's centre, > 0 (2 = twice as close)", valueName: "Z"),
            OptionSpec(name: "square", help: "a square edit (the crop's centred square)", isFlag: true),
            OptionSpec(name: "circle", help: "a round edit: square, outside the circle filled", isFlag: true),
            OptionSpec(name: "size", help: "longest edge of the edited photo in pixels", valueName: "N"),
            OptionSpec(name: "primary", help: "make the new photo (the edit, if any) the item's primary photo", isFlag: true),
            OptionSpec(name: "wait", help: "follow the job until it is done", isFlag: true),
            QueueStall.option,
            OptionSpec(name: "no-progress", help: "no progress bar on stderr", isFlag: true),
            OptionSpec(name: "no-resume", help: "begin a large file's upload anew instead of going on where an interrupted one stopped", isFlag: true),
        ],
        allowsPositionals: true)

    static let sourcesParser = OptionParser(
        command: "capture sources", summary: "Lists the capture sources, whether this deployment has each, and what each gives.",
        usage: "homepwner capture sources", options: CommonOptions.endpoints)

    static let statusParser = OptionParser(
        command: "capture status", summary: "Shows a capture job: its state, the images it stored, or why it failed.",
        usage: "homepwner capture status JOB [--wait]",
        options: CommonOptions.endpoints + [OptionSpec(name: "wait", help: "follow the job until it is done", isFlag: true), QueueStall.option],
        allowsPositionals: true)

    static let saveParser = OptionParser(
        command: "capture save",
        summary: "Saves a stored image into the photo library's album folder (where the deployment allows it), never over a file.",
        usage: "homepwner capture save IMAGE [--album A]",
        options: CommonOptions.endpoints + [
            OptionSpec(name: "album", help: "a folder inside the album folder (made when missing)", valueName: "A"),
        ],
        allowsPositionals: true)

    static func run(_ arguments: [String]) async -> Int32 {
        if let first = arguments.first, ["sources", "status", "save", "-h", "--help", "help"].contains(first) {
            return await runSubcommand(of: "capture", overview: overview, names: ["sources", "status", "save"], arguments) { subcommand, rest in
                switch subcommand {
                case "sources": await sources(rest)
                case "status": await status(rest)
                case "save": await save(rest)
                default: nil
                }
            }
        }
        return await capture(arguments)
    }

    // MARK: capture ITEM

    static func capture(_ arguments: [String]) async -> Int32 {
        guard let options = HomepwnerCLI.parse(captureParser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        guard options.positionals.count == 1, let item = options.positionals.first else {
            return ItemCommand.usageError("capture", "give one ITEM key (got \(options.positionals.count)); see 'homepwner capture --help'")
        }
        var request = CaptureRequest()
        request.itemKey = item
        request.makePrimary = options.bool("primary")
        var file: (path: String, size: Int)?
        do {
            let given = [options["file"] != nil, options["library"] != nil, options.bool("recent"), options.bool("camera")]
            guard given.filter({ $0 }).count == 1 else {
                throw OptionError.invalidValue(option: "source", value: "", reason: "give exactly one of --file, --library, --recent, --camera")
            }
            if let path = options["file"] {
                request.source = .upload
                file = (path, try ImagePutCommand.fileSize(path))
            } else if let relative = options["library"] {
                request.source = .library
                request.sourcePath = relative
            } else if options.bool("recent") {
                request.source = .recent
            } else {
                request.source = .camera
            }
            if let edit = try edit(options) { request.edit = edit }
        } catch {
            return ItemCommand.usageError("capture", "\(error)")
        }
        let json = options.bool("json"), wait = options.bool("wait")
        guard let stall = QueueStall(queue: JobQueueSpec.capture.name, options: options, command: "capture") else { return ExitCode.usage }
        return await CommonOptions.withClientExitCode(options, service: "item", command: "capture") { client, timeout in
            if let file {
                if file.size <= CaptureSources.maxInlineBytes {
                    request.data = [UInt8](try Data(contentsOf: URL(fileURLWithPath: file.path)))
                } else {
                    request.imageKey = try await upload(file, owner: item, options: options, timeout: timeout)
                }
            }
            let response = try await client.call(
                CaptureServiceRPC.capture, request,
                options: .init(timeoutMilliseconds: max(timeout, 30_000), idempotencyKey: UUID().uuidString.lowercased()))
            let queued = response.job ?? CaptureJob()
            let job = wait ? try await follow(queued.jobId, client: client, timeout: timeout, quiet: json, stall: stall) : queued
            return report(job, json: json)
        }
    }

    /// The edit the flags ask for; nil when none.
    static func edit(_ options: ParsedOptions) throws -> Edit? {
        var edit = Edit()
        var any = false
        if let crop = options["crop"] {
            let parts = crop.split(separator: ",", omittingEmptySubsequences: false).map { Int32($0.trimmingCharacters(in: .whitespaces)) }
            guard parts.count == 4, parts.allSatisfy({ $0 != nil }) else {
                throw OptionError.invalidValue(option: "--crop", value: crop, reason: "must be X,Y,W,H in pixels, e.g. 100,50,800,600")
            }
            (edit.cropX, edit.cropY, edit.cropWidth, edit.cropHeight) = (parts[0]!, parts[1]!, parts[2]!, parts[3]!)
            guard edit.cropWidth > 0, edit.cropHeight > 0 else {
                throw OptionError.invalidValue(option: "--crop", value: crop, reason: "width and height must be > 0")
            }
            any = true
        }
        if let zoom = options["zoom"] {
            // On the wire 0 means none; here a zoom must be given as what it is.
            guard let value = Double(zoom), value.isFinite, value > 0 else {
                throw OptionError.invalidValue(option: "--zoom", value: zoom, reason: "must be a number > 0 (1 = none, 2 = twice as close)")
            }
            edit.scale = value
            any = true
        }
        switch (options.bool("square"), options.bool("circle")) {
        case (true, true): throw OptionError.invalidValue(option: "--square", value: "", reason: "give --square or --circle, not both")
        case (true, false): edit.shape = .square; any = true
        case (false, true): edit.shape = .circle; any = true
        default: break
        }
        if let size = options["size"] {
            guard let value = Int32(size), value > 0 else {
                throw OptionError.invalidValue(option: "--size", value: size, reason: "must be a pixel count > 0")
            }
            edit.outputSize = value
            any = true
        }
        return any ? edit : nil
    }

    /// A large file up to the image service in chunks (owned by the item), with a progress bar.
    static func upload(_ file: (path: String, size: Int), owner: String, options: ParsedOptions, timeout: UInt32) async throws -> String {
        let context = try CLIContext.make(options)
        let endpoint = try options.string("image")
        let images = try RPCClient(context: context, endpoint: endpoint)
        defer { images.close() }
        var settings = ImagePutCommand.Settings()
        settings.owner = owner.lowercased()
        settings.chunked = true
        settings.timeout = timeout
        // An upload of this file cut short (the client killed, the service restarted) goes on
        // where it stopped (`image put`'s resume state).
        settings.endpoint = endpoint
        settings.resume = !options.bool("no-resume")
        let bar = ProgressBar(total: file.size, enabled: !options.bool("no-progress") && !options.bool("json"))
        let info = try await ImagePutCommand.put(
            file.path, size: file.size, key: UUID().uuidString.lowercased(), settings, client: images) { bar.update($0) }
        bar.finish()
        return info.key
    }

    /// GetCaptureJob.
    static func fetch(_ id: String, client: RPCClient, timeout: UInt32) async throws -> CaptureJob {
        var request = GetCaptureJobRequest()
        request.jobId = id
        return try await client.call(CaptureServiceRPC.getCaptureJob, request, options: .init(timeoutMilliseconds: timeout)).job ?? CaptureJob()
    }

    /// Polls GetCaptureJob until the job is DONE or DEAD; when it has not moved for a while,
    /// `stall` says once why that may be.
    static func follow(_ id: String, client: RPCClient, timeout: UInt32, quiet: Bool, stall: QueueStall) async throws -> CaptureJob {
        var said = JobState.unspecified
        var stall = stall
        while true {
            let job = try await fetch(id, client: client, timeout: timeout)
            if job.state == .done || job.state == .dead { return job }
            if !quiet, job.state != said {
                printError("capture job \(job.jobId): \(stateName(job.state))" + (job.error.isEmpty ? "" : " (last attempt: \(job.error))"))
                said = job.state
            }
            // Any change of the job (leased, an attempt failed, a heartbeat) is a sign of life.
            if let hint = await stall.observe(job.updatedAtMs &+ Int64(job.state.rawValue), client: client, timeout: timeout) {
                QueueStall.print(hint, afterBar: false)
            }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// Prints the job; the exit code says how it ended (DEAD: by its error's code).
    static func report(_ job: CaptureJob, json: Bool) -> Int32 {
        if json {
            print((try? QueueCommand.json(job)) ?? "{}")
        } else {
            print(describe(job))
        }
        guard job.state == .dead else { return ExitCode.ok }
        let code = ExitCode.forStatus(StatusCode(rawValue: job.errorCode))
        return code == ExitCode.failure || code == ExitCode.ok ? ExitCode.deadJobs : code
    }

    static func describe(_ job: CaptureJob) -> String {
        var lines = ["capture job \(job.jobId) for item \(job.itemKey): \(stateName(job.state))"]
        if !job.originalKey.isEmpty { lines.append("  original \(job.originalKey)" + (job.duplicate ? " (a duplicate: these bytes were attached already)" : "")) }
        if !job.editedKey.isEmpty { lines.append("  edited   \(job.editedKey)") }
        if !job.error.isEmpty { lines.append("  error    \(job.error)") }
        if job.state == .queued || job.state == .running {
            lines.append("  follow it with: homepwner capture status \(job.jobId) --wait")
        }
        return lines.joined(separator: "\n")
    }

    static func stateName(_ state: JobState) -> String {
        switch state {
        case .queued: "QUEUED"
        case .running: "RUNNING"
        case .done: "DONE"
        case .dead: "FAILED"
        default: "UNKNOWN"
        }
    }

    // MARK: sources, status

    static func sources(_ arguments: [String]) async -> Int32 {
        guard let options = HomepwnerCLI.parse(sourcesParser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        return await CommonOptions.withClient(options, service: "item", command: "capture sources") { client, timeout in
            let response = try await client.call(CaptureServiceRPC.listSources, ListSourcesRequest(), options: .init(timeoutMilliseconds: timeout))
            if options.bool("json") { return print(try QueueCommand.json(response)) }
            var rows = [["SOURCE", "AVAILABLE", "GIVES", "WHAT"]]
            for source in response.sources {
                let name = (CaptureSourceType.protoValueNames[source.type.rawValue] ?? "\(source.type.rawValue)").lowercased()
                let media = source.mediaTypes.map { $0 == .movie ? "movies" : "photos" }.joined(separator: ", ")
                rows.append([name, source.available ? "yes" : "no", media.isEmpty ? "-" : media, source.description])
            }
            printColumns(rows)
        }
    }

    static func save(_ arguments: [String]) async -> Int32 {
        guard let options = HomepwnerCLI.parse(saveParser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        guard options.positionals.count == 1, let key = options.positionals.first else {
            return ItemCommand.usageError("capture save", "give one IMAGE key")
        }
        var request = SaveToAlbumRequest()
        request.imageKey = key
        request.album = options["album"] ?? ""
        return await CommonOptions.withClient(options, service: "item", command: "capture save") { client, timeout in
            let response = try await client.call(
                CaptureServiceRPC.saveToAlbum, request,
                options: .init(timeoutMilliseconds: max(timeout, 60_000), idempotencyKey: UUID().uuidString.lowercased()))
            print(options.bool("json") ? try QueueCommand.json(response) : "saved \(key) to \(response.path)")
        }
    }

    static func status(_ arguments: [String]) async -> Int32 {
        guard let options = HomepwnerCLI.parse(statusParser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        guard options.positionals.count == 1, let id = options.positionals.first else {
            return ItemCommand.usageError("capture status", "give one JOB id (as capture printed it)")
        }
        guard let stall = QueueStall(queue: JobQueueSpec.capture.name, options: options, command: "capture status") else { return ExitCode.usage }
        return await CommonOptions.withClientExitCode(options, service: "item", command: "capture status") { client, timeout in
            let job = options.bool("wait")
                ? try await follow(id, client: client, timeout: timeout, quiet: options.bool("json"), stall: stall)
                : try await fetch(id, client: client, timeout: timeout)
            return report(job, json: options.bool("json"))
        }
    }
}
