import CLISupport
import Digest
import Foundation
import Proto
import RPC
import Runtime

/// `homepwner fsck [--repair]`: checks that the two services agree and that what they store is
/// whole, over RPC (an admin key when the suite has CURVE keys): photos items list that the
/// image store lacks, images no item references (orphans), blobs whose bytes do not hash to
/// their checksum (or are missing), thumbnails older than their image or made twice, jobs
/// running past their lease and a sweep, dead jobs without a reason.
enum FsckCommand {
    static let parser = OptionParser(
        command: "fsck",
        summary: "Checks both services: every photo an item lists is stored, every image belongs to an item, every "
            + "blob hashes to its checksum, no thumbnail is stale or made twice, no job is stuck. "
            + "Exit 0 when clean, 1 with findings (each names the key and what is wrong). "
            + "--repair removes orphan images older than --grace and detaches photos that are gone.",
        usage: "homepwner fsck [--repair] [--grace SECONDS] [--no-bytes] [--sweep-ms MS] [--json]",
        options: CommonOptions.endpoints + [
            OptionSpec(name: "repair", help: "delete orphan images, detach photos the image store lacks", isFlag: true),
            OptionSpec(name: "grace", defaultValue: "600",
                       help: "images younger than this are not orphans yet (a capture in flight stores, then attaches)",
                       valueName: "SECONDS"),
            OptionSpec(name: "no-bytes", help: "do not read every blob to check its SHA-256", isFlag: true),
            OptionSpec(name: "sweep-ms", defaultValue: "2000",
                       help: "a RUNNING job is stuck once its lease ended this long ago (a sweep ends expired leases)",
                       valueName: "MS"),
        ])

    /// One thing found wrong: its kind, the key it is about (an image, an item or a job), the
    /// item concerned if any, what is wrong, and what --repair did about it.
    struct Finding {
        let kind: String
        let key: String
        var item: String = ""
        let detail: String
        var repaired: String = ""

        var line: String {
            "\(kind) \(key)\(item.isEmpty ? "" : " (item \(item))"): \(detail)" + (repaired.isEmpty ? "" : " — repaired: \(repaired)")
        }

        var json: String {
            "{\"kind\": \(jsonString(kind)), \"key\": \(jsonString(key)), \"item\": \(jsonString(item)), "
                + "\"detail\": \(jsonString(detail)), \"repaired\": \(jsonString(repaired))}"
        }
    }


    static func run(_ arguments: [String]) async -> Int32 {
        guard let options = HomepwnerCLI.parse(parser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        let grace: Int, sweep: Int
        do {
            grace = try options.int("grace")
            sweep = try options.int("sweep-ms")
            guard grace >= 0 else { throw OptionError.invalidValue(option: "--grace", value: String(grace), reason: "must be ≥ 0") }
            guard sweep >= 0 else { throw OptionError.invalidValue(option: "--sweep-ms", value: String(sweep), reason: "must be ≥ 0") }
        } catch {
            return ItemCommand.usageError("fsck", "\(error)")
        }
        return await CommonOptions.withClientExitCode(options, service: "image", command: "fsck") { images, timeout in
            let context = try CLIContext.make(options)
            let items = try RPCClient(context: context, endpoint: try options.string("item"))
            defer { items.close() }
            var check = Check(
                items: items, images: images, timeout: timeout, graceMs: Int64(grace) * 1000, sweepMs: Int64(sweep),
                readBytes: !options.bool("no-bytes"), repair: options.bool("repair"))
            try await check.run()
            let unrepaired = check.findings.filter { $0.repaired.isEmpty }.count
            if options.bool("json") {
                print("{\"items\": \(check.itemCount), \"images\": \(check.imageCount), \"bytes_checked\": \(check.bytesChecked), "
                    + "\"young_unreferenced\": \(check.young), \"pending_cascades\": \(check.pendingCascades), "
                    + "\"clean\": \(check.findings.isEmpty), \"unrepaired\": \(unrepaired), \"findings\": ["
                    + check.findings.map(\.json).joined(separator: ",\n") + "]}")
            } else {
                for finding in check.findings { print(finding.line) }
                var summary = "\(check.itemCount) items, \(check.imageCount) images, \(ImageCommand.byteCount(check.bytesChecked)) read"
                if check.young > 0 { summary += ", \(check.young) unreferenced images younger than --grace left alone" }
                if check.pendingCascades > 0 { summary += ", \(check.pendingCascades) item deletes still cascading" }
                print(summary + ": " + (check.findings.isEmpty ? "clean" : "\(check.findings.count) findings, \(unrepaired) not repaired"))
            }
            return unrepaired == 0 ? ExitCode.ok : ExitCode.failure
        }
    }

    /// The walk over both services.
    struct Check {
        let items: RPCClient
        let images: RPCClient
        let timeout: UInt32
        let graceMs: Int64
        let sweepMs: Int64
        let readBytes: Bool
        let repair: Bool
        var findings: [Finding] = []
        var itemCount = 0
        var imageCount = 0
        var bytesChecked: Int64 = 0
        var young = 0
        var pendingCascades: Int64 = 0

        var options: CallOptions { .init(timeoutMilliseconds: timeout) }

        mutating func run() async throws {
            // Images first, then items: an image stored meanwhile is not in the first list, and
            // one attached meanwhile is in the second, so neither looks like an orphan.
            let stored = try await listImages()
            let all = try await listItems()
            imageCount = stored.count
            itemCount = all.count
            pendingCascades = try await items.call(ItemServiceRPC.stats, ItemStatsRequest(), options: options).pendingCascades
            let byKey = Dictionary(stored.map { ($0.key, $0) }, uniquingKeysWith: { first, _ in first })
            try await missingPhotos(all, byKey)
            try await orphans(stored, byKey, attached: Set(all.flatMap(\.photoKeys)))
            thumbnails(stored, byKey)
            try await blobs(stored)
            try await jobs()
        }

        func listImages() async throws -> [ImageInfo] {
            var request = ListImagesRequest()
            request.pageSize = 1000
            return try await everyPage(images, ImageServiceRPC.listImages, request, token: \.pageToken) { ($0.images, $0.nextPageToken) }
        }

        func listItems() async throws -> [Item] {
            var request = ListItemsRequest()
            request.pageSize = 1000
            return try await everyPage(items, ItemServiceRPC.listItems, request, token: \.pageToken) { ($0.items, $0.nextPageToken) }
        }

        /// Every entry of a listing, page after page until its next token is empty.
        func everyPage<Request, Response, Entry>(
            _ client: RPCClient, _ method: ProtoMethod<Request, Response>, _ first: Request,
            token: WritableKeyPath<Request, String>, _ page: (Response) -> ([Entry], String)
        ) async throws -> [Entry] {
            var request = first, all: [Entry] = []
            repeat {
                let (entries, next) = page(try await client.call(method, request, options: options))
                all += entries
                request[keyPath: token] = next
            } while !request[keyPath: token].isEmpty
            return all
        }

        /// The image's info now, nil when it is not stored.
        func stat(_ key: String) async throws -> ImageInfo? {
            try await BlobRead.stat(key, images: images, options: options)
        }

        /// Photos an item lists that the image store does not have (checked again one by one:
        /// one stored after the image list was read is not missing).
        mutating func missingPhotos(_ all: [Item], _ byKey: [String: ImageInfo]) async throws {
            for item in all {
                for photo in item.photoKeys where byKey[photo] == nil {
                    guard try await stat(photo) == nil else { continue }
                    var finding = Finding(
                        kind: "missing-photo", key: photo, item: item.key,
                        detail: "the item lists this photo and the image store does not have it")
                    if repair {
                        var request = DetachPhotoRequest()
                        request.itemKey = item.key
                        request.imageKey = photo
                        do {
                            _ = try await items.call(ItemServiceRPC.detachPhoto, request, options: options)
                            finding.repaired = "detached from the item"
                        } catch {
                            guard error.code == .notFound else { throw error }
                            finding.repaired = "no longer attached"
                        }
                    }
                    findings.append(finding)
                }
            }
        }

        /// Originals and edits that no item references, directly or through the image they were
        /// made from or an edit of them; thumbnails belong to their parent and are reported only
        /// when that parent is gone.
        mutating func orphans(_ stored: [ImageInfo], _ byKey: [String: ImageInfo], attached: Set<String>) async throws {
            var referenced = attached
            for image in stored where attached.contains(image.key) && !image.parentKey.isEmpty {
                referenced.insert(image.parentKey)
            }
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            for image in stored {
                let detail: String
                if image.kind == .thumbnail {
                    guard byKey[image.parentKey] == nil, try await stat(image.parentKey) == nil else { continue }
                    detail = "a thumbnail whose image \(image.parentKey) is gone"
                } else {
                    guard !referenced.contains(image.key), !referenced.contains(image.parentKey) else { continue }
                    guard now - image.createdAtMs >= graceMs else {
                        young += 1
                        continue
                    }
                    detail = "\(image.kind) image no item references (owner \(image.ownerKey.isEmpty ? "none" : image.ownerKey), "
                        + "\(image.sizeBytes) bytes, created \(ItemCommand.timestamp(image.createdAtMs)))"
                }
                var finding = Finding(kind: "orphan-image", key: image.key, detail: detail)
                if repair {
                    var request = DeleteImageRequest()
                    request.key = image.key
                    do {
                        _ = try await images.call(ImageServiceRPC.deleteImage, request, options: options)
                        finding.repaired = "deleted"
                    } catch {
                        guard error.code == .notFound else { throw error }
                        finding.repaired = "already gone"
                    }
                }
                findings.append(finding)
            }
        }

        /// Thumbnails made before the image they show was stored (a stale one, of what was
        /// stored under the key before), and two of the same size of one image where the image
        /// is larger than that size (made twice; a small image's sizes may all come out alike).
        mutating func thumbnails(_ stored: [ImageInfo], _ byKey: [String: ImageInfo]) {
            var seen: [String: String] = [:]
            for thumbnail in stored where thumbnail.kind == .thumbnail {
                guard let parent = byKey[thumbnail.parentKey] else { continue }
                if thumbnail.createdAtMs < parent.createdAtMs {
                    findings.append(Finding(
                        kind: "stale-thumbnail", key: thumbnail.key,
                        detail: "made at \(thumbnail.createdAtMs), before its image \(parent.key) was stored at \(parent.createdAtMs)"))
                }
                let edge = max(thumbnail.width, thumbnail.height)
                guard edge < max(parent.width, parent.height) else { continue }
                let size = "\(parent.key) \(thumbnail.width)x\(thumbnail.height)"
                if let first = seen[size] {
                    findings.append(Finding(
                        kind: "duplicate-thumbnail", key: thumbnail.key,
                        detail: "a second \(thumbnail.width)×\(thumbnail.height) thumbnail of \(parent.key) (the first: \(first))"))
                } else {
                    seen[size] = thumbnail.key
                }
            }
        }

        /// Reads every blob in ranges and hashes it; the service refuses (DATA_LOSS) a range whose
        /// blocks do not match or whose file is missing.
        mutating func blobs(_ stored: [ImageInfo]) async throws {
            let start = try await images.call(ImageServiceRPC.stats, ImageStatsRequest(), options: options)
            if start.missingBlobs > 0 {
                findings.append(Finding(
                    kind: "missing-blobs", key: "image-service",
                    detail: "its last start found \(start.missingBlobs) indexed images without their file"))
            }
            guard readBytes else { return }
            for image in stored {
                let read = try await BlobRead.hash(image, images: images, timeout: timeout)
                bytesChecked += read.bytes
                var problem = read.problem
                if let checksum = read.checksum, checksum != image.checksum {
                    problem = "its bytes hash to \(checksum), not the stored \(image.checksum)"
                }
                if let problem {
                    findings.append(Finding(kind: "damaged-image", key: image.key, item: image.ownerKey, detail: problem))
                }
            }
        }

        /// Jobs RUNNING past their lease and a sweep, DEAD jobs without a reason.
        mutating func jobs() async throws {
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            for queue in JobQueueSpec.all {
                let client = queue.host == .item ? items : images
                for job in try await QueueJobsCommand.jobs([.running], queue: queue.name, limit: .max, client: client, timeout: timeout)
                where job.leaseExpiresAtMs + sweepMs < now {
                    findings.append(Finding(
                        kind: "stuck-job", key: job.jobId,
                        detail: "\(queue.name) job RUNNING \(now - job.leaseExpiresAtMs) ms past its lease (worker \(job.workerId))"))
                }
                for job in try await QueueJobsCommand.jobs([.dead], queue: queue.name, limit: .max, client: client, timeout: timeout)
                where job.lastError.isEmpty {
                    findings.append(Finding(kind: "dead-job-without-reason", key: job.jobId, detail: "\(queue.name) job DEAD with no error kept"))
                }
            }
        }
    }
}
