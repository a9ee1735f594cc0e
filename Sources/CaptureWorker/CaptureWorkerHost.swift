import Capture
import JPEG
import Media
import Proto
import RPC
import Runtime
import WorkerRuntime
import ZMQ

/// Composes capture-worker: connections to item-service (whose `capture` queue it leases
/// from, and which it attaches photos through) and image-service (where it stores them), the
/// job runner, and a Health endpoint.
public enum CaptureWorkerHost {
    /// The flags of the capture-worker executable: the workers' own, the capture sources'
    /// (which item-service must be given the same), `--edit-background` and
    /// `--max-pixels` and `--max-decoded-bytes` (which image-service must be given the same).
    public static let options = WorkerConfiguration.options(
        healthEnv: EnvironmentNames.captureWorkerHealth, healthDefault: Defaults.captureWorkerHealth,
        memoryBytesPerJob: memoryBytesPerJob) + CaptureSources.options + [
        OptionSpec(name: "edit-background", env: EnvironmentNames.captureEditBackground, defaultValue: "ffffff",
                   help: "colour outside a circle edit (and around a zoom past the photo's edge), as RRGGBB", valueName: "RRGGBB"),
    ] + DecodeLimitOption.specs

    /// The `--edit-background` colour; a usage error for anything but six hex digits.
    public static func background(_ options: ParsedOptions) throws -> PhotoEdit.Color {
        let text = try options.string("edit-background")
        guard text.utf8.count == 6, let value = UInt32(text, radix: 16) else {
            throw OptionError.invalidValue(option: "--edit-background", value: text, reason: "must be six hex digits RRGGBB, e.g. ffffff")
        }
        return PhotoEdit.Color(r: UInt8(value >> 16), g: UInt8((value >> 8) & 0xFF), b: UInt8(value & 0xFF))
    }

    /// The worker's parts, in start order: the two connections, the runner (as many jobs at
    /// once as `configuration.concurrency`, their decodes and edits within the memory budget)
    /// and the host answering Health/Check. Nothing durable is held here: a job it was running
    /// when it died returns to the queue when its lease expires, and its next attempt stores
    /// under the same keys. Nothing is connected or bound until the composition starts.
    public static func make(
        _ configuration: WorkerConfiguration, sources: CaptureSources, background: PhotoEdit.Color = .white,
        decodeOptions: DecodeOptions = .init(), context: Context, logger: Logger
    ) throws -> ServiceComposition {
        let items = ClientConnection(name: "item-service-connection", context: context, endpoint: configuration.itemServiceEndpoint)
        let images = ClientConnection(name: "image-service-connection", context: context, endpoint: configuration.imageServiceEndpoint)
        // `concurrency` decodes and edits at once within the budget, and `readAhead` more jobs
        // running: each obtains its photo or stores and attaches while the others edit.
        let slots = ComputeSlots(count: configuration.concurrency, budgetBytes: configuration.memoryBytes(perJob: memoryBytesPerJob))
        // A camera command per job at most, each waited for on a thread of these.
        let threads = BlockingPool(name: "capture-blocking", count: configuration.concurrency + readAhead)
        let handler = CaptureJobHandler(
            items: items, images: images, sources: sources, threads: threads, slots: slots,
            weigher: { workingBytes($0, options: decodeOptions) }, maxPixels: decodeOptions.maxPixels,
            editor: { jpeg, edit in try Self.edit(jpeg, edit, background: background, options: decodeOptions) },
            decoder: { try decode($0, options: decodeOptions) })
        let runner = JobRunner(
            name: "capture-runner", connection: items,
            configuration: JobRunner.Configuration(
                queue: JobQueueSpec.capture.name, workerID: WorkerConfiguration.workerID("capture-worker"),
                concurrency: configuration.concurrency + readAhead, leaseMilliseconds: configuration.leaseMilliseconds,
                maxRunMilliseconds: configuration.maxJobMilliseconds),
            logger: logger, handler: handler.run)
        let host = try ServiceHost(
            name: "capture-worker", context: context, rpcEndpoints: [configuration.healthEndpoint], logger: logger)
        host.server.addFigures { runner.figures() + slots.figures() }
        host.server.addHealthConditions { runner.healthConditions() }
        return ServiceComposition([items, images, threads, runner, host])
    }

    /// A whole decode, under `options`' limits: what a photo must pass to be stored (a HEIC's
    /// checks and decode, `HEIF.validate`).
    static func decode(_ jpeg: [UInt8], options: DecodeOptions = .init()) throws {
        do {
            if HEIF.sniff(jpeg) {
                _ = try HEIF.validate(jpeg, options: options)
                return
            }
            _ = try JPEG.decode(jpeg, options: options)
        } catch {
            throw RPCError.invalidArgument("the photo does not decode: \(DecodeLimitOption.describe(error))")
        }
    }

    /// Jobs run beyond `concurrency`: a capture waits on its puts and attaches (fsynced) for a
    /// good part of its time, in which another one's edit keeps the core busy.
    public static let readAhead = 1

    /// The memory budget per job at once when `--memory-mb` is not given: a 12-megapixel
    /// photo's edit holds about 72 MB (`workingBytes`), so two at once fit with room; a
    /// 48-megapixel one (~290 MB) runs alone.
    public static let memoryBytesPerJob = 160 << 20

    /// What decoding or editing `jpeg` holds at its peak, from its header: the decoded pixels
    /// and as much again for their upright copy or the edited region (6 bytes a pixel; the
    /// lossless crop's coefficients take 3 to 6); 0 for a header that does not read (the
    /// decode says why).
    /// A HEIC's: its decode's (`HEIFHeader.decodedBytes`) and its upright pixels' edited region
    /// again (3 a pixel).
    static func workingBytes(_ jpeg: [UInt8], options: DecodeOptions = .init()) -> Int {
        if HEIF.sniff(jpeg) {
            guard let header = try? HEIF.header(of: jpeg, options: options) else { return 0 }
            return header.decodedBytes + header.width * header.height * 3
        }
        guard let header = try? JPEG.header(of: jpeg, options: options) else { return 0 }
        return header.width * header.height * 6
    }

    /// The wire's `Edit` as `PhotoEditor` takes it: all-zero crop = none, scale 0 = 1, size 0 = as cropped.
    static func photoEdit(_ edit: Edit, background: PhotoEdit.Color) -> PhotoEdit {
        let crop = edit.hasCrop
            ? PhotoEdit.Rect(x: Int(edit.cropX), y: Int(edit.cropY), width: Int(edit.cropWidth), height: Int(edit.cropHeight)) : nil
        let shape: PhotoEdit.Shape = switch edit.shape {
        case .square: .square
        case .circle: .circle
        default: .rectangle
        }
        return PhotoEdit(
            crop: crop, zoom: edit.scale == 0 ? 1 : edit.scale, shape: shape,
            outputSize: edit.outputSize == 0 ? nil : Int(edit.outputSize), background: background)
    }

    /// The edit of a photo (`PhotoEditor`): what does not fit the photo is INVALID_ARGUMENT.
    static func edit(
        _ jpeg: [UInt8], _ edit: Edit, background: PhotoEdit.Color, options: DecodeOptions = .init()
    ) throws -> (data: [UInt8], lossless: Bool) {
        do {
            let edit = photoEdit(edit, background: background), editor = PhotoEditor(options: options)
            let edited = try HEIF.sniff(jpeg) ? editor.edit(heif: jpeg, edit) : editor.edit(jpeg, edit)
            return (edited.data, edited.lossless)
        } catch {
            switch error.kind {
            case .invalidEdit: throw RPCError.invalidArgument(error.message)
            case .image(let cause): throw RPCError.invalidArgument("the photo cannot be edited: \(DecodeLimitOption.describe(cause, as: error.message))")
            case .heif(let cause): throw RPCError.invalidArgument("the photo cannot be edited: \(DecodeLimitOption.describe(cause, as: error.message))")
            }
        }
    }
}
