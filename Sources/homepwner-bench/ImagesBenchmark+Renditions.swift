import Foundation
import ImageService
import JPEG
import Proto
import RPC
import Runtime
import Locking
import ZMQ

/// `homepwner-bench images --renditions [--rounds N] [--source-mb M] [--count N]`: the latency
/// of 1 KB PutImage calls, one after another, alone and while `--count` (32) GetRendition calls
/// at distinct sizes, all cache misses, render a photo-like JPEG of about `--source-mb` (200)
/// MB, in `--rounds` (3) rounds, each round with sizes of its own.
extension ImagesBenchmark {
    static func putsBesideRenditions(_ arguments: [String]) async throws {
        func number(_ flag: String, _ otherwise: Int) -> Int {
            arguments.firstIndex(of: flag).flatMap { arguments.indices.contains($0 + 1) ? Int(arguments[$0 + 1]) : nil } ?? otherwise
        }
        let rounds = max(1, number("--rounds", 3)), count = max(1, number("--count", 32))
        let sourceBytes = max(1, number("--source-mb", 200)) * 1_000_000
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hp-bench-renditions-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let context = try Context(ioThreads: 1)
        let configuration = ImageServiceConfiguration(
            rpcEndpoint: "tcp://127.0.0.1:*", eventsEndpoint: "tcp://127.0.0.1:*", dataDirectory: folder,
            maxMessageBytes: sourceBytes + (64 << 20), watchMemoryPressure: false)
        let composition = try ImageServiceHost.make(configuration, context: context, logger: Logger(label: "bench", level: .warning))
        try composition.start()
        defer { composition.stop() }
        let client = try RPCClient(context: try Context(ioThreads: 1), endpoint: composition.host.rpcEndpoints[0])
        defer { client.close() }

        FileHandle.standardError.write(Data("encoding a JPEG of about \(sourceBytes / 1_000_000) MB\n".utf8))
        let source = try noiseJPEG(sourceBytes)
        let original = try await put(source, client: client)
        print("Source: a \(source.count / 1_000_000) MB JPEG (noise, quality 100, 4:4:4); \(count) renditions at distinct sizes per round.")
        print("")
        print("| round | 1 KB PutImage | puts | p50 ms | p99 ms | max ms | renditions took s |")
        print("|---|---|---|---|---|---|---|")
        var seed = 0
        /// 1 KB puts one after another until `done` says stop (at least `minimum`); their latencies in ms.
        func smallPuts(minimum: Int, until done: () -> Bool) async throws -> [Double] {
            var latencies: [Double] = []
            while latencies.count < minimum || !done() {
                seed += 1
                let start = monotonicSeconds()
                let key = try await put(payload(1000, seed: seed), client: client)
                latencies.append((monotonicSeconds() - start) * 1000)
                var delete = DeleteImageRequest()
                delete.key = key
                _ = try await client.call(ImageServiceRPC.deleteImage, delete)
            }
            return latencies
        }
        func row(_ round: Int, _ what: String, _ latencies: [Double], _ seconds: String) {
            let sorted = latencies.sorted()
            func at(_ fraction: Double) -> String { String(format: "%.1f", sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]) }
            print("| \(round) | \(what) | \(sorted.count) | \(at(0.5)) | \(at(0.99)) | \(at(1)) | \(seconds) |")
        }
        for round in 1...rounds {
            _ = try await client.call(ImageServiceRPC.purgeCache, PurgeCacheRequest())
            row(round, "alone", try await smallPuts(minimum: 200) { true }, "")
            let start = monotonicSeconds()
            let renditions = (0..<count).map { index in
                Task {
                    var request = GetRenditionRequest()
                    request.key = original
                    request.width = Int32(200 + round * count + index)
                    request.height = request.width
                    _ = try await client.call(
                        ImageServiceRPC.getRendition, request, options: .init(timeoutMilliseconds: 3_600_000, retry: .none))
                    return monotonicSeconds()
                }
            }
            let ended = Locked(0)
            let watcher = Task {
                for rendition in renditions { _ = try await rendition.value; ended.withLock { $0 += 1 } }
            }
            let latencies = try await smallPuts(minimum: 1) { ended.withLock { $0 } == count }
            try await watcher.value
            var last = start
            for rendition in renditions { last = max(last, try await rendition.value) }
            row(round, "beside \(count) renditions", latencies, String(format: "%.1f", last - start))
        }
    }

    /// A JPEG of about `count` bytes that decodes slowly for its size: noise at quality 100,
    /// 4:4:4, its size scaled from a sample's bytes per pixel.
    static func noiseJPEG(_ count: Int) throws -> [UInt8] {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func image(_ width: Int, _ height: Int) -> RGBImage {
            var pixels = [UInt8](repeating: 0, count: width * height * 3)
            pixels.withUnsafeMutableBytes { raw in
                for i in 0..<raw.count {
                    state ^= state << 13; state ^= state >> 7; state ^= state << 17
                    raw[i] = UInt8(truncatingIfNeeded: state)
                }
            }
            return RGBImage(width: width, height: height, pixels: pixels)
        }
        let sample = try JPEG.encode(image(512, 512), quality: 100, subsampling: .s444)
        let pixels = Double(count) / (Double(sample.count) / (512 * 512))
        let width = Int((pixels * 4 / 3).squareRoot()) / 16 * 16, height = Int(pixels) / width / 16 * 16
        return try JPEG.encode(image(width, height), quality: 100, subsampling: .s444)
    }
}
