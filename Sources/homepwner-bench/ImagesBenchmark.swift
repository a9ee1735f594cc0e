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

        /// Adds another run's bytes and time.
        mutating func add(_ other: Measure) {
            bytes += other.bytes
            seconds += other.seconds
        }
    }

    static let sizes: [(label: String, bytes: Int, count: Int)] = [
        ("100 KB", 100_000, 200), ("2 MB", 2_000_000, 25), ("20 MB", 20_000_000, 5),
    ]
    static let what = [
        "raw file write + fsync", "PutImage (durable)", "ImageStore.put, no RPC", "raw file read, cold",
        "GetImage, cold (disk)", "bare ZeroMQ transfer", "GetImage, cached", "raw O_DIRECT write + fsync",
        "raw file write + fsync, 4 writers", "PutImage, 4 in flight", "GetImage, cached, on the client's thread",
        "bare ZeroMQ send + raw file write + fsync", "raw cold read + bare ZeroMQ transfer",
        "raw cold pread of 1 MiB + bare ZeroMQ transfer", "GetImage of 1 MiB, cold (disk)",
    ]
    /// Rows of the report: (variant, baseline); the variant's MB/s and the ratio to the baseline.
    static let rows: [(String, String?)] = [
        (what[0], nil), (what[7], nil), (what[11], what[0]), (what[1], what[0]), (what[1], what[7]), (what[1], what[11]),
        (what[2], what[0]), (what[2], what[7]),
        (what[8], nil), (what[9], what[8]), (what[9], what[0]),
        (what[3], nil), (what[12], what[3]), (what[4], what[3]), (what[4], what[12]), (what[13], nil), (what[14], what[13]), (what[5], nil), (what[6], what[5]), (what[10], what[5]),
    ]

    static func run(_ arguments: [String]) async {
        if arguments.contains("--renditions") {
            do {
                try await putsBesideRenditions(arguments)
            } catch {
                FileHandle.standardError.write(Data("images --renditions failed: \(error)\n".utf8))
                exit(1)
            }
            return
        }
        /// The word after `flag`, or "" when the flag ends the line.
        func value(_ flag: String) -> String? {
            arguments.firstIndex(of: flag).map { arguments.indices.contains($0 + 1) ? arguments[$0 + 1] : "" }
        }
        let rounds = value("--rounds").map { Int($0) ?? 0 } ?? 3
        guard rounds > 0 else {
            FileHandle.standardError.write(Data("images: --rounds takes a number ≥ 1 (got \(value("--rounds") ?? ""))\n".utf8))
            exit(2)
        }
        let only = value("--size")
        let sharedContext = arguments.contains("--shared-context")
        let labels = sizes.map { $0.label.replacingOccurrences(of: " ", with: "") }
        if let only, !labels.contains(only) {
            FileHandle.standardError.write(Data("images: --size takes \(labels.joined(separator: ", ")) (got \(only))\n".utf8))
            exit(2)
        }
        do {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hp-bench-images-\(UUID().uuidString.prefix(8))").path
            try FileManager.default.createDirectory(atPath: folder + "/raw", withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let context = try Context(ioThreads: 1)
            let logger = Logger(label: "bench", level: .warning)
            let configuration = ImageServiceConfiguration(
                rpcEndpoint: "tcp://127.0.0.1:*", eventsEndpoint: "tcp://127.0.0.1:*", dataDirectory: folder + "/data",
                cacheBudgetBytes: 1 << 30, watchMemoryPressure: false)
            let composition = try ImageServiceHost.make(configuration, context: context, logger: logger)
            try composition.start()
            defer { composition.stop() }
            let host = composition.host
            // The client side has a context of its own, as another process would (unless
            // --shared-context): with one, a single libzmq I/O thread carries each transfer out
            // and back in, which favours the bare echo more than GetImage.
            let clientContext = sharedContext ? context : try Context(ioThreads: 1)
            let client = try RPCClient(context: clientContext, endpoint: host.rpcEndpoints[0])
            defer { client.close() }
            let echo = try BlobEcho(context: context, clientContext: clientContext)
            defer { echo.stop() }
            // The store alone, on a folder of its own: where a put's time goes without the RPC.
            let bareStore = try ImageStore(
                folder: folder + "/store-only", cache: ImageCache(budgetBytes: 1 << 30), logger: logger)
            defer { bareStore.close() }
            try bareStore.start()

            if let index = arguments.firstIndex(of: "--profile"), index + 1 < arguments.count {
                try await profile(
                    arguments[index + 1], rounds: rounds, arguments: arguments, client: client, store: bareStore, echo: echo,
                    dataFolder: folder + "/data")
                return
            }
            var results: [String: [String: [Measure]]] = [:]
            for round in 0..<rounds {
                for size in sizes where only == nil || only == size.label.replacingOccurrences(of: " ", with: "") {
                    FileHandle.standardError.write(Data("round \(round + 1)/\(rounds): \(size.label)\n".utf8))
                    let blobs = (0..<size.count).map { i in payload(size.bytes, seed: round * 1000 + i) }
                    let tag = "\(round)-\(size.label.replacingOccurrences(of: " ", with: ""))"
                    let writes = try await interleavedWrites(
                        blobs, folder: folder + "/raw/\(tag)", client: client, store: bareStore, echo: echo)
                    var r = writes.measures
                    let keys = writes.keys
                    // With concurrency: four writers against four puts in flight (order
                    // alternating by round, so neither always meets the other's write-back).
                    let rawFolder = folder + "/raw4/\(tag)"
                    if round % 2 == 0 { r[what[8]] = try rawWrites(blobs, folder: rawFolder, lanes: 4) }
                    let (fourPuts, fourKeys) = try await puts(blobs, client: client, inFlight: 4)
                    r[what[9]] = fourPuts
                    try await delete(fourKeys, client: client)
                    if round % 2 == 1 { r[what[8]] = try rawWrites(blobs, folder: rawFolder, lanes: 4) }
                    let cold = try await interleavedColdReads(
                        rawFolder: folder + "/raw/\(tag)", keys: keys, blobsFolder: folder + "/data/images/blobs", client: client,
                        echo: echo)
                    r.merge(cold) { $1 }
                    // Every blob in the cache (read a second time: see `ImageStore.admits`).
                    _ = try await gets(keys, client: client)
                    // At least 100 MB each, in passes over the blobs whose order rotates (a
                    // single pass of 25 × 2 MB lasts ~15 ms: one hiccup would decide it). GetImage
                    // from a task on the pool (the reply handed from the client's I/O thread to
                    // the task) and from the client's own thread (`client.executor`).
                    var bare = Measure(), pooled = Measure(), onClient = Measure()
                    for pass in 0..<max(1, 100_000_000 / (size.bytes * size.count)) {
                        for step in 0..<3 {
                            switch (round + pass + step) % 3 {
                            case 0: bare.add(try echo.transfer(blobs))
                            case 1: pooled.add(try await gets(keys, client: client))
                            default: onClient.add(try await gets(keys, client: client, onClientThread: true))
                            }
                        }
                    }
                    (r[what[5]], r[what[6]], r[what[10]]) = (bare, pooled, onClient)
                    for (name, measure) in r { results[size.label, default: [:]][name, default: []].append(measure) }
                    try await delete(keys, client: client)
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
                // Rows a size does not measure (the ranged read of a blob under 4 MiB) are left out.
                guard !values.isEmpty else { continue }
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
        for i in 0..<25 { keys.append(try await put(payload(20_000_000, seed: 90_000 + i), client: client)) }
        // A blob over 1 MiB enters the cache on its second read.
        for _ in 0..<2 { _ = try await gets(keys, client: client) }
        let stats = try await client.call(ImageServiceRPC.cacheStats, CacheStatsRequest())
        let before = residentBytes()
        let purge = try await client.call(ImageServiceRPC.purgeCache, PurgeCacheRequest())
        let after = residentBytes()
        print("")
        print("Cache holding \(stats.entries) entries, \(stats.bytes / 1_000_000) MB: RSS \(before / 1_000_000) MB; "
            + "after PurgeCache (freed \(purge.freedBytes / 1_000_000) MB, malloc_trim): RSS \(after / 1_000_000) MB.")
    }

    static func residentBytes() -> Int {
        Int(ProcessMemory.current().residentBytes)
    }
}

