import Foundation
import ImageService
import Proto
import RPC
import Runtime
import Synchronization

/// The timed operations of `homepwner-bench images`: the baselines and the service's calls.
extension ImagesBenchmark {
    static func timed(_ bytes: Int, _ body: () throws -> Void) rethrows -> Measure {
        let start = monotonicSeconds()
        try body()
        return Measure(bytes: bytes, seconds: monotonicSeconds() - start)
    }

    /// The baseline for puts: `blob` in a file of its own, written and fsynced (open, write,
    /// fsync, close).
    static func rawWrite(_ blob: [UInt8], path: String) throws {
        try blob.withUnsafeBytes { try rawWrite($0, path: path) }
    }

    /// `rawWrite` from bytes in place.
    static func rawWrite(_ blob: UnsafeRawBufferPointer, path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw RPCError.internal("open \(path): errno \(errno)") }
        defer { close(fd) }
        _ = write(fd, blob.baseAddress, blob.count)
        fsync(fd)
    }

    /// `rawWrite` by `lanes` threads, each taking every `lanes`-th blob.
    static func rawWrites(_ blobs: [[UInt8]], folder: String, lanes: Int) throws -> Measure {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let failures = Atomic<Int>(0)
        let measure = timed(blobs.reduce(0) { $0 + $1.count }) {
            DispatchQueue.concurrentPerform(iterations: lanes) { lane in
                for (i, blob) in blobs.enumerated() where i % lanes == lane {
                    if (try? rawWrite(blob, path: "\(folder)/\(i)")) == nil { failures.add(1, ordering: .relaxed) }
                }
            }
        }
        guard failures.load(ordering: .relaxed) == 0 else { throw RPCError.internal("raw writes could not open their files") }
        return measure
    }

    /// `blob` written with O_DIRECT (4 MiB aligned chunks, the tail padded, then truncated) and
    /// fsynced: the floor for a write that goes around the page cache.
    static func directWrite(_ blob: [UInt8], path: String, buffer: UnsafeMutableRawPointer) throws {
        #if arch(x86_64)
        let directFlag: Int32 = 0o40000
        #else
        let directFlag: Int32 = 0o200000
        #endif
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | directFlag, 0o644)
        guard fd >= 0 else { throw RPCError.internal("open O_DIRECT: errno \(errno)") }
        defer { close(fd) }
        try blob.withUnsafeBytes { source in
            var offset = 0
            while offset < source.count {
                let count = min(4 << 20, source.count - offset)
                buffer.copyMemory(from: source.baseAddress! + offset, byteCount: count)
                let padded = (count + 4095) & ~4095
                if padded > count { (buffer + count).initializeMemory(as: UInt8.self, repeating: 0, count: padded - count) }
                guard write(fd, buffer, padded) == padded else { throw RPCError.internal("O_DIRECT write: errno \(errno)") }
                offset += count
            }
        }
        ftruncate(fd, off_t(blob.count))
        fsync(fd)
    }

    /// One PutImage.
    static func put(_ blob: [UInt8], client: RPCClient) async throws -> String {
        var request = PutImageRequest()
        request.data = blob
        return try await client.call(ImageServiceRPC.putImage, request, options: .init(timeoutMilliseconds: 60_000)).key
    }

    /// PutImage of every blob, `inFlight` calls at a time; returns the time and the new keys.
    static func puts(_ blobs: [[UInt8]], client: RPCClient, inFlight: Int = 1) async throws -> (Measure, [String]) {
        let start = monotonicSeconds()
        let keys = try await withThrowingTaskGroup(of: [String].self) { group in
            for lane in 0..<inFlight {
                group.addTask {
                    var keys: [String] = []
                    for (i, blob) in blobs.enumerated() where i % inFlight == lane { keys.append(try await put(blob, client: client)) }
                    return keys
                }
            }
            return try await group.reduce(into: [String]()) { $0 += $1 }
        }
        return (Measure(bytes: blobs.reduce(0) { $0 + $1.count }, seconds: monotonicSeconds() - start), keys)
    }

    /// DeleteImage of every key.
    static func delete(_ keys: [String], client: RPCClient) async throws {
        for key in keys {
            var delete = DeleteImageRequest()
            delete.key = key
            _ = try await client.call(ImageServiceRPC.deleteImage, delete)
        }
    }

    /// The writers blob by blob (raw file, raw O_DIRECT file, PutImage, ImageStore.put, the bare
    /// ZeroMQ put into a raw file), so each meets the disk in the same state: the disk's speed
    /// drifts over seconds, and a writer timed right after another's 100 MB would pay for its
    /// write-back. The order rotates from blob to blob, so none always follows the same one.
    static func interleavedWrites(
        _ blobs: [[UInt8]], folder: String, client: RPCClient, store: ImageStore, echo: BlobEcho
    ) async throws -> (measures: [String: Measure], keys: [String]) {
        try FileManager.default.createDirectory(atPath: folder + "/sink", withIntermediateDirectories: true)
        // The direct-I/O baseline writes through one aligned buffer, as the store does.
        let aligned = UnsafeMutableRawPointer.allocate(byteCount: 4 << 20, alignment: 4096)
        defer { aligned.deallocate() }
        let sink = try echo.sink(folder: folder + "/sink")
        defer { sink.close() }
        var seconds: [String: Double] = [:]
        var keys: [String] = [], storeKeys: [String] = []
        for (i, blob) in blobs.enumerated() {
            for step in 0..<5 {
                let start = monotonicSeconds()
                let writer: String
                switch (i + step) % 5 {
                case 0:
                    try rawWrite(blob, path: "\(folder)/\(i)")
                    writer = what[0]
                case 1:
                    try directWrite(blob, path: "\(folder)/d\(i)", buffer: aligned)
                    writer = what[7]
                case 2:
                    keys.append(try await Self.put(blob, client: client))
                    writer = what[1]
                case 3:
                    storeKeys.append(try await store.put(blob, NewImage()).info.key)
                    writer = what[2]
                default:
                    try sink.put(blob)
                    writer = what[11]
                }
                seconds[writer, default: 0] += monotonicSeconds() - start
            }
        }
        for key in storeKeys { _ = try await store.delete(key) }
        let bytes = blobs.reduce(0) { $0 + $1.count }
        return (seconds.mapValues { Measure(bytes: bytes, seconds: $0) }, keys)
    }

    /// The same puts straight into an `ImageStore` (sniff, digests, durable write, index row), then deleted.
    static func storePuts(_ blobs: [[UInt8]], store: ImageStore) async throws -> Measure {
        var keys: [String] = []
        let start = monotonicSeconds()
        for blob in blobs { keys.append(try await store.put(blob, NewImage()).info.key) }
        let measure = Measure(bytes: blobs.reduce(0) { $0 + $1.count }, seconds: monotonicSeconds() - start)
        for key in keys { _ = try await store.delete(key) }
        return measure
    }

    /// The cold reads blob by blob, each from the disk (its pages dropped just before it): the
    /// raw file read (`open`, `read`), the same read into a ZeroMQ frame on a ROUTER thread that
    /// sends it to a DEALER (a GetImage without the service: the floor for any read that answers
    /// over ZeroMQ), and GetImage (cache purged first). `rawFolder` holds the files `rawWrite`
    /// left, `<i>` holding the blob of `keys[i]`; the order rotates from blob to blob.
    static func interleavedColdReads(
        rawFolder: String, keys: [String], blobsFolder: String, client: RPCClient, echo: BlobEcho
    ) async throws -> [String: Measure] {
        _ = try await client.call(ImageServiceRPC.purgeCache, PurgeCacheRequest())
        let reader = try echo.reader()
        defer { reader.close() }
        var measures: [String: Measure] = [:]
        for (i, key) in keys.enumerated() {
            let raw = "\(rawFolder)/\(i)"
            for step in 0..<3 {
                let reading: String
                var bytes = 0
                let start: Double
                switch (i + step) % 3 {
                case 0:
                    evict(raw)
                    start = monotonicSeconds()
                    bytes = try Data(contentsOf: URL(fileURLWithPath: raw)).count
                    reading = what[3]
                case 1:
                    evict(raw)
                    start = monotonicSeconds()
                    bytes = try reader.read(raw)
                    reading = what[12]
                default:
                    evict(blobPath(blobsFolder, key))
                    start = monotonicSeconds()
                    bytes = try await gets([key], client: client).bytes
                    reading = what[4]
                }
                measures[reading, default: Measure()].add(Measure(bytes: bytes, seconds: monotonicSeconds() - start))
            }
            // Ranges of a large blob: 1 MiB at each eighth of it, block-aligned (a viewer's tile,
            // a resumed download), each against one pread of it, the whole file's pages dropped
            // first; seven of them per blob, as one read of 1 MiB is over in a millisecond or two.
            let size = try FileManager.default.attributesOfItem(atPath: raw)[.size] as? Int ?? 0
            guard size >= 4 << 20 else { continue }
            for (eighth, step) in (1..<8).flatMap({ eighth in (0..<2).map { (eighth, $0) } }) {
                let range = (offset: size * eighth / 8 / (1 << 20) * (1 << 20), length: 1 << 20)
                let start: Double, bytes: Int, reading: String
                if (i + eighth + step) % 2 == 0 {
                    evict(raw)
                    start = monotonicSeconds()
                    bytes = try reader.read(raw, range: range)
                    reading = what[13]
                } else {
                    evict(blobPath(blobsFolder, key))
                    var request = GetImageRequest()
                    request.key = key
                    request.offset = Int64(range.offset)
                    request.length = Int64(range.length)
                    start = monotonicSeconds()
                    bytes = try await getImage(request, client: client)
                    reading = what[14]
                }
                measures[reading, default: Measure()].add(Measure(bytes: bytes, seconds: monotonicSeconds() - start))
            }
        }
        return measures
    }

    /// GetImage of every key, whole.
    static func gets(_ keys: [String], client: RPCClient, onClientThread: Bool = false) async throws -> Measure {
        @Sendable func run() async throws -> Measure {
            var total = 0
            let start = monotonicSeconds()
            for key in keys {
                var request = GetImageRequest()
                request.key = key
                total += try await getImage(request, client: client)
            }
            return Measure(bytes: total, seconds: monotonicSeconds() - start)
        }
        return onClientThread ? try await withTaskExecutorPreference(client.executor) { try await run() } : try await run()
    }

    /// One GetImage, its bytes used where the reply's frame holds them (as `homepwner image get`
    /// and the workers read); how many.
    static func getImage(_ request: GetImageRequest, client: RPCClient) async throws -> Int {
        let (reply, data) = try await client.call(
            ImageServiceRPC.getImage, request, largeBytesField: GetImageResponse.dataField, options: .init(timeoutMilliseconds: 60_000))
        return data?.count ?? reply.data.count
    }

    /// Where the image service keeps blob `key` under `root` (its `blobs/` folder).
    static func blobPath(_ root: String, _ key: String) -> String {
        "\(root)/\(key.prefix(2))/\(key)"
    }

    /// Drops a file's pages from the page cache, so the next read goes to the disk.
    static func evict(_ path: String) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = posix_fadvise(fd, 0, 0, Int32(POSIX_FADV_DONTNEED))
        close(fd)
    }
}
