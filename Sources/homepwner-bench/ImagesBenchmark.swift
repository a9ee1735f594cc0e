import Foundation
import ImageService
import Proto
import RPC
import Runtime
import Synchronization
import ZMQ

/// `homepwner-bench images`: PutImage and GetImage throughput (cold from disk, cached) for
/// 100 KB, 2 MB and 20 MB blobs, next to raw fsynced file writes and reads and a bare
/// ZeroMQ transfer of the same bytes, interleaved in rounds in one run.
enum ImagesBenchmark {
    struct Measure {
        var bytes = 0
        var seconds = 0.0
        var megabytesPerSecond: Double { seconds > 0 ? Double(bytes) / seconds / 1e6 : 0 }
    }

    static let sizes: [(label: String, bytes: Int, count: Int)] = [
        ("100 KB", 100_000, 200), ("2 MB", 2_000_000, 25), ("20 MB", 20_000_000, 5),
    ]
    static let what = [
        "raw file write + fsync", "PutImage (durable)", "ImageStore.put, no RPC", "raw file read, cold",
        "GetImage, cold (disk)", "bare ZeroMQ transfer", "GetImage, cached", "raw O_DIRECT write + fsync",
    ]
    /// Rows of the report: (variant, baseline); the variant's MB/s and the ratio to the baseline.
    static let rows: [(String, String?)] = [
        (what[0], nil), (what[7], nil), (what[1], what[0]), (what[1], what[7]), (what[2], what[0]), (what[2], what[7]),
        (what[3], nil), (what[4], what[3]), (what[5], nil), (what[6], what[5]),
    ]

    static func run(_ arguments: [String]) async {
        let rounds = arguments.firstIndex(of: "--rounds").flatMap { Int(arguments[$0 + 1]) } ?? 3
        do {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hp-bench-images-\(UUID().uuidString.prefix(8))").path
            try FileManager.default.createDirectory(atPath: folder + "/raw", withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let context = try Context(ioThreads: 1)
            let logger = Logger(label: "bench", level: .warning)
            let configuration = ImageServiceConfiguration(
                rpcEndpoint: "tcp://127.0.0.1:*", eventsEndpoint: "tcp://127.0.0.1:*", dataDirectory: folder + "/data",
                cacheBudgetBytes: 1 << 30, watchMemoryPressure: false)
            let host = try ImageServiceHost.make(configuration, context: context, logger: logger)
            try host.start()
            defer { host.stop() }
            let client = try RPCClient(context: context, endpoint: host.rpcEndpoints[0])
            defer { client.close() }
            let echo = try BlobEcho(context: context)
            defer { echo.stop() }
            // The store alone, on a folder of its own: where a put's time goes without the RPC.
            let bareStore = try ImageStore(
                folder: folder + "/store-only", cache: ImageCache(budgetBytes: 1 << 30), logger: logger)
            defer { bareStore.close() }

            if let index = arguments.firstIndex(of: "--profile"), index + 1 < arguments.count {
                // For profilers: one variant only, 20 MB blobs, round after round.
                try await profile(arguments[index + 1], rounds: rounds, arguments: arguments, client: client, store: bareStore, echo: echo)
                return
            }
            var results: [String: [String: [Measure]]] = [:]
            for round in 0..<rounds {
                for size in sizes {
                    FileHandle.standardError.write(Data("round \(round + 1)/\(rounds): \(size.label)\n".utf8))
                    let blobs = (0..<size.count).map { i in payload(size.bytes, seed: round * 1000 + i) }
                    var r: [String: Measure] = [:]
                    let writes = try await interleavedWrites(
                        blobs, folder: folder + "/raw/\(round)-\(size.label.replacingOccurrences(of: " ", with: ""))",
                        client: client, store: bareStore)
                    let keys = writes.keys
                    (r[what[0]], r[what[1]], r[what[2]], r[what[7]]) = (writes.raw, writes.put, writes.storePut, writes.direct)
                    r[what[3]] = try rawReads(folder + "/raw/\(round)-\(size.label.replacingOccurrences(of: " ", with: ""))", count: blobs.count)
                    _ = try await client.call(ImageServiceRPC.purgeCache, PurgeCacheRequest())
                    for key in keys { evict(blobPath(folder + "/data/images/blobs", key)) }
                    r[what[4]] = try await gets(keys, client: client)
                    r[what[5]] = try echo.transfer(blobs)
                    r[what[6]] = try await gets(keys, client: client)
                    for (name, measure) in r { results[size.label, default: [:]][name, default: []].append(measure) }
                    for key in keys {
                        var delete = DeleteImageRequest()
                        delete.key = key
                        _ = try await client.call(ImageServiceRPC.deleteImage, delete)
                    }
                }
            }
            report(results, rounds: rounds)
            try await memoryAfterPurge(client: client)
        } catch {
            FileHandle.standardError.write(Data("images benchmark failed: \(error)\n".utf8))
            exit(1)
        }
    }

    /// An MP4-looking blob (the service recognises the container), distinct per seed.
    static func payload(_ count: Int, seed: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var state = UInt64(seed + 1) &* 0x9E37_79B9_7F4A_7C15
        bytes.withUnsafeMutableBytes { raw in
            let words = raw.bindMemory(to: UInt64.self)
            for i in 0..<words.count {
                state ^= state << 13; state ^= state >> 7; state ^= state << 17
                words[i] = state
            }
        }
        let header: [UInt8] = [0, 0, 0, 16] + Array("ftypisom".utf8) + [0, 0, 0, 0]
        bytes.replaceSubrange(0..<header.count, with: header)
        return bytes
    }

    static func timed(_ bytes: Int, _ body: () throws -> Void) rethrows -> Measure {
        let start = monotonicSeconds()
        try body()
        return Measure(bytes: bytes, seconds: monotonicSeconds() - start)
    }

    /// The baseline for puts: one file per blob, written and fsynced (open, write, fsync, close).
    static func rawWrites(_ blobs: [[UInt8]], folder: String) throws -> Measure {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        return try timed(blobs.reduce(0) { $0 + $1.count }) {
            for (i, blob) in blobs.enumerated() {
                let fd = open("\(folder)/\(i)", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
                guard fd >= 0 else { throw RPCError.internal("open: errno \(errno)") }
                _ = blob.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                fsync(fd)
                close(fd)
            }
        }
    }

    /// The baseline for cold gets: the same files read back after evicting them from the page cache.
    static func rawReads(_ folder: String, count: Int) throws -> Measure {
        for i in 0..<count { evict("\(folder)/\(i)") }
        var total = 0
        let measure = try timed(0) {
            for i in 0..<count {
                let data = try Data(contentsOf: URL(fileURLWithPath: "\(folder)/\(i)"))
                total += data.count
            }
        }
        return Measure(bytes: total, seconds: measure.seconds)
    }

    /// The three writers blob by blob (raw file, PutImage, ImageStore.put, each blob in turn), so
    /// each meets the disk in the same state: the disk's speed drifts over seconds, and a
    /// writer timed right after another's 100 MB would pay for its write-back.
    static func interleavedWrites(
        _ blobs: [[UInt8]], folder: String, client: RPCClient, store: ImageStore
    ) async throws -> (raw: Measure, put: Measure, storePut: Measure, direct: Measure, keys: [String]) {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        var raw = Measure(), put = Measure(), storePut = Measure(), direct = Measure()
        // The direct-I/O baseline writes through one aligned buffer, as the store does.
        let aligned = UnsafeMutableRawPointer.allocate(byteCount: 4 << 20, alignment: 4096)
        defer { aligned.deallocate() }
        var keys: [String] = [], storeKeys: [String] = []
        for (i, blob) in blobs.enumerated() {
            raw.bytes += blob.count
            put.bytes += blob.count
            storePut.bytes += blob.count
            var start = monotonicSeconds()
            let fd = open("\(folder)/\(i)", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard fd >= 0 else { throw RPCError.internal("open: errno \(errno)") }
            _ = blob.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            fsync(fd)
            close(fd)
            raw.seconds += monotonicSeconds() - start
            direct.bytes += blob.count
            start = monotonicSeconds()
            try directWrite(blob, path: "\(folder)/d\(i)", buffer: aligned)
            direct.seconds += monotonicSeconds() - start
            start = monotonicSeconds()
            var request = PutImageRequest()
            request.data = blob
            keys.append(try await client.call(ImageServiceRPC.putImage, request, options: .init(timeoutMilliseconds: 60_000)).key)
            put.seconds += monotonicSeconds() - start
            start = monotonicSeconds()
            storeKeys.append(try await store.put(blob, NewImage()).info.key)
            storePut.seconds += monotonicSeconds() - start
        }
        for key in storeKeys { _ = try await store.delete(key) }
        return (raw, put, storePut, direct, keys)
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

    static func puts(_ blobs: [[UInt8]], client: RPCClient) async throws -> (Measure, [String]) {
        var keys: [String] = []
        let start = monotonicSeconds()
        for blob in blobs {
            var request = PutImageRequest()
            request.data = blob
            keys.append(try await client.call(ImageServiceRPC.putImage, request, options: .init(timeoutMilliseconds: 60_000)).key)
        }
        return (Measure(bytes: blobs.reduce(0) { $0 + $1.count }, seconds: monotonicSeconds() - start), keys)
    }

    /// `--profile put|put-refused|store-put|get-cached|get-cached-undecoded|bare [--bytes N]`: that variant alone (20 MB blobs unless
    /// `--bytes` says otherwise, 100 MB per round), printing MB/s per round.
    static func profile(
        _ variant: String, rounds: Int, arguments: [String], client: RPCClient, store: ImageStore, echo: BlobEcho
    ) async throws {
        let size = arguments.firstIndex(of: "--bytes").flatMap { Int(arguments[$0 + 1]) } ?? 20_000_000
        let blobs = (0..<max(1, 100_000_000 / size)).map { payload(size, seed: 500 + $0) }
        var keys: [String] = []
        for round in 0..<rounds {
            let measure: Measure
            switch variant {
            case "put":
                let (put, newKeys) = try await puts(blobs, client: client)
                measure = put
                for key in newKeys {
                    var delete = DeleteImageRequest()
                    delete.key = key
                    _ = try await client.call(ImageServiceRPC.deleteImage, delete)
                }
            case "put-refused":
                // The transfer and decode of a put without the store: an invalid kind is refused first.
                let start = monotonicSeconds()
                for blob in blobs {
                    var request = PutImageRequest()
                    request.data = blob
                    request.kind = ImageKind(rawValue: 99)
                    _ = try? await client.call(ImageServiceRPC.putImage, request)
                }
                measure = Measure(bytes: blobs.reduce(0) { $0 + $1.count }, seconds: monotonicSeconds() - start)
            case "store-put":
                measure = try await storePuts(blobs, store: store)
            case "get-cached-undecoded":
                // GetImage from the cache with the reply left undecoded (the client's decode cost).
                if keys.isEmpty { keys = try await puts(blobs, client: client).1 }
                let start = monotonicSeconds()
                var total = 0
                for key in keys {
                    var request = GetImageRequest()
                    request.key = key
                    total += try await client.callRaw(
                        path: ImageServiceRPC.getImage.path, body: MessageBody(encoding: request), readOnly: true).bodyFrame.count
                }
                measure = Measure(bytes: total, seconds: monotonicSeconds() - start)
            case "decode":
                // Decoding a GetImageResponse of this size from a frame, as the client does.
                var response = GetImageResponse()
                response.data = blobs[0]
                let frame = Frame(response.serializedBytes())
                let start = monotonicSeconds()
                var total = 0
                for _ in blobs {
                    let limit = DecodingOptions(maxBytes: 1 << 30)
                    total += try frame.withUnsafeBytes { buffer throws(ProtoDecodingError) in
                        try GetImageResponse(serializedBuffer: buffer, options: limit)
                    }.data.count
                }
                measure = Measure(bytes: total, seconds: monotonicSeconds() - start)
            case "copy":
                // The floor for the decode: copying the bytes into a new array.
                let frame = Frame(blobs[0])
                let start = monotonicSeconds()
                var total = 0
                for _ in blobs { total += frame.bytes.count }
                measure = Measure(bytes: total, seconds: monotonicSeconds() - start)
            case "bare":
                measure = try echo.transfer(blobs)
            case "get-cached":
                if keys.isEmpty { keys = try await puts(blobs, client: client).1 }
                measure = try await gets(keys, client: client)
            default:
                throw RPCError.invalidArgument("--profile takes put, store-put or get-cached (got \(variant))")
            }
            print("round \(round + 1): \(variant) \(String(format: "%.0f", measure.megabytesPerSecond)) MB/s")
        }
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

    static func gets(_ keys: [String], client: RPCClient) async throws -> Measure {
        var total = 0
        let start = monotonicSeconds()
        for key in keys {
            var request = GetImageRequest()
            request.key = key
            total += try await client.call(ImageServiceRPC.getImage, request, options: .init(timeoutMilliseconds: 60_000)).data.count
        }
        return Measure(bytes: total, seconds: monotonicSeconds() - start)
    }

    static func blobPath(_ root: String, _ key: String) -> String {
        let hex = key.replacingOccurrences(of: "-", with: "")
        return "\(root)/\(hex.prefix(2))/\(key)"
    }

    /// Drops a file's pages from the page cache, so the next read goes to the disk.
    static func evict(_ path: String) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = posix_fadvise(fd, 0, 0, Int32(POSIX_FADV_DONTNEED))
        close(fd)
    }

    /// One row per variant: its median MB/s, and for a variant with a baseline the median of
    /// the per-round ratios (each round against the baseline measured in that round) with their
    /// range, which holds up better than a ratio of medians on a disk whose speed drifts.
    static func report(_ results: [String: [String: [Measure]]], rounds: Int) {
        print("| blob | what | MB/s (median of \(rounds)) | ratio (median, min–max of rounds) | compared with |")
        print("|---|---|---|---|---|")
        func median(_ values: [Double]) -> Double {
            let sorted = values.sorted()
            return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
        }
        for size in sizes {
            guard let table = results[size.label] else { continue }
            for (name, baseline) in rows {
                let values = (table[name] ?? []).map(\.megabytesPerSecond)
                let speed = String(format: "%.0f", median(values))
                guard let base = baseline, let bases = table[base] else {
                    print("| \(size.label) | \(name) | \(speed) | | |")
                    continue
                }
                let ratios = zip(values, bases.map(\.megabytesPerSecond)).map { $0 / max($1, 0.001) }
                let range = String(format: "%.2f (%.2f–%.2f)", median(ratios), ratios.min() ?? 0, ratios.max() ?? 0)
                print("| \(size.label) | \(name) | \(speed) | \(range) | \(base) |")
            }
        }
    }

    /// Fills the cache with 20 MB blobs, then PurgeCache: the resident set before and after.
    static func memoryAfterPurge(client: RPCClient) async throws {
        var keys: [String] = []
        for i in 0..<25 {
            var request = PutImageRequest()
            request.data = payload(20_000_000, seed: 90_000 + i)
            keys.append(try await client.call(ImageServiceRPC.putImage, request, options: .init(timeoutMilliseconds: 60_000)).key)
        }
        _ = try await gets(keys, client: client)
        let stats = try await client.call(ImageServiceRPC.cacheStats, CacheStatsRequest())
        let before = residentBytes()
        let purge = try await client.call(ImageServiceRPC.purgeCache, PurgeCacheRequest())
        let after = residentBytes()
        print("")
        print("Cache holding \(stats.entries) entries, \(stats.bytes / 1_000_000) MB: RSS \(before / 1_000_000) MB; "
            + "after PurgeCache (freed \(purge.freedBytes / 1_000_000) MB, malloc_trim): RSS \(after / 1_000_000) MB.")
    }

    static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kb = Int(line.split(separator: " ").dropFirst().first ?? "")
        else { return 0 }
        return kb * 1024
    }
}

/// Bare ZeroMQ: a ROUTER thread answering each small request with the same three frames a
/// GetImage reply has (`[empty][header][blob]`), over tcp loopback, one at a time.
final class BlobEcho: Sendable {
    private final class Shared: Sendable {
        let stopping = Atomic<Bool>(false)
        let finished = Atomic<Bool>(false)
        /// The blobs to answer with, in turn: the same bytes the service serves.
        let blobs = Mutex<[[UInt8]]>([])
        let endpoint = Mutex<String?>(nil)
    }

    private let endpoint: String
    private let context: Context
    private let shared = Shared()

    init(context: Context) throws {
        self.context = context
        let shared = shared
        let ready = DispatchSemaphore(value: 0)
        Thread {
            defer { shared.finished.store(true, ordering: .relaxed) }
            guard let router = try? Socket(context, .router), (try? router.bind("tcp://127.0.0.1:*")) != nil else {
                ready.signal()
                return
            }
            shared.endpoint.withLock { $0 = try? router.lastEndpoint }
            ready.signal()
            let poller = Poller()
            poller.add(router, events: .in)
            var next = 0
            while !shared.stopping.load(ordering: .relaxed) {
                guard (try? poller.poll(timeoutMilliseconds: 100)) ?? 0 > 0 else { continue }
                while let message = try? router.receive(dontWait: true) {
                    let blob = shared.blobs.withLock { $0.isEmpty ? [] : $0[next % $0.count] }
                    next += 1
                    _ = try? router.send([message[0], [], [8, 1], blob])
                }
            }
            router.close()
        }.start()
        ready.wait()
        guard let bound = shared.endpoint.withLock({ $0 }) else { throw RPCError.unavailable("echo server did not bind") }
        endpoint = bound
    }

    /// MB/s of request/reply exchanges, one per blob of `blobs` in turn (the blobs GetImage
    /// serves in the same round: as many distinct buffers, so neither side has them all in
    /// the CPU's caches).
    func transfer(_ blobs: [[UInt8]]) throws -> ImagesBenchmark.Measure {
        shared.blobs.withLock { $0 = blobs }
        defer { shared.blobs.withLock { $0 = [] } }
        let dealer = try Socket(context, .dealer)
        defer { dealer.close() }
        try dealer.connect(endpoint)
        let request: [[UInt8]] = [[], [10, 1, 0x2f], [10, 36] + Array(repeating: 0x61, count: 36)]
        // One exchange to connect (its blob is skipped: the echo goes on from the next one).
        try dealer.send(request)
        _ = try dealer.receive()
        var total = 0
        let start = monotonicSeconds()
        for _ in 0..<blobs.count {
            try dealer.send(request)
            total += try dealer.receive()?.last?.count ?? 0
        }
        return ImagesBenchmark.Measure(bytes: total, seconds: monotonicSeconds() - start)
    }

    func stop() {
        shared.stopping.store(true, ordering: .relaxed)
        while !shared.finished.load(ordering: .relaxed) { usleep(1000) }
    }
}
