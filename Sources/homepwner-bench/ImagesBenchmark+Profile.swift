import Foundation
import ImageService
import JPEG
import Proto
import RPC
import Runtime
import ZMQ

/// `homepwner-bench images --profile VARIANT [--bytes N]`: one variant alone, round after round,
/// for a profiler (perf) or a trace.
extension ImagesBenchmark {
    static let profileVariants = [
        "put", "put4", "put-jpeg", "store-put-jpeg", "raw", "raw4", "put-refused", "store-put", "get-cold", "get-cached", "get-cached-client-thread",
        "get-cached-undecoded", "decode", "bare", "cold-floor",
    ]

    /// Runs `variant` on blobs of `--bytes` (20 MB unless given; 100 MB per round), printing MB/s per round.
    static func profile(
        _ variant: String, rounds: Int, arguments: [String], client: RPCClient, store: ImageStore, echo: BlobEcho,
        dataFolder: String
    ) async throws {
        guard profileVariants.contains(variant) else {
            throw RPCError.invalidArgument("--profile takes \(profileVariants.joined(separator: ", ")) (got \(variant))")
        }
        let size = arguments.firstIndex(of: "--bytes").flatMap { arguments.indices.contains($0 + 1) ? Int(arguments[$0 + 1]) : nil } ?? 20_000_000
        let jpeg = variant.hasSuffix("-jpeg")
        let blobs = try (0..<max(1, 100_000_000 / size)).map { jpeg ? try jpegPayload(size, seed: 500 + $0) : payload(size, seed: 500 + $0) }
        let bytes = blobs.reduce(0) { $0 + $1.count }
        if jpeg { print("\(blobs.count) JPEGs of \(blobs.map(\.count).min()!)...\(blobs.map(\.count).max()!) bytes") }
        var keys: [String] = []
        for round in 0..<rounds {
            let measure: Measure
            switch variant {
            case "put", "put4", "put-jpeg":
                let (put, newKeys) = try await puts(blobs, client: client, inFlight: variant == "put4" ? 4 : 1)
                measure = put
                try await delete(newKeys, client: client)
            case "raw", "raw4":
                let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hp-raw-\(UUID().uuidString.prefix(8))").path
                defer { try? FileManager.default.removeItem(atPath: folder) }
                measure = try rawWrites(blobs, folder: folder, lanes: variant == "raw4" ? 4 : 1)
            case "put-refused":
                // The transfer and decode of a put without the store: an invalid kind is refused first.
                let start = monotonicSeconds()
                for blob in blobs {
                    var request = PutImageRequest()
                    request.data = blob
                    request.kind = ImageKind(rawValue: 99)
                    _ = try? await client.call(ImageServiceRPC.putImage, request)
                }
                measure = Measure(bytes: bytes, seconds: monotonicSeconds() - start)
            case "store-put", "store-put-jpeg":
                measure = try await storePuts(blobs, store: store)
            case "get-cold":
                // From the disk: the cache emptied and the blobs' pages dropped before each round.
                if keys.isEmpty { keys = try await puts(blobs, client: client).1 }
                _ = try await client.call(ImageServiceRPC.purgeCache, PurgeCacheRequest())
                for key in keys { evict(blobPath(dataFolder + "/images/blobs", key)) }
                measure = try await gets(keys, client: client)
            case "get-cached", "get-cached-client-thread":
                if keys.isEmpty { keys = try await puts(blobs, client: client).1 }
                measure = try await gets(keys, client: client, onClientThread: variant == "get-cached-client-thread")
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
                let limit = DecodingOptions(maxBytes: 1 << 30)
                let start = monotonicSeconds()
                var total = 0
                for _ in blobs {
                    total += try frame.withUnsafeBytes { buffer throws(ProtoDecodingError) in
                        try GetImageResponse(serializedBuffer: buffer, options: limit)
                    }.data.count
                }
                measure = Measure(bytes: total, seconds: monotonicSeconds() - start)
            case "cold-floor":
                // The floor of get-cold: each blob's file read cold into a frame and sent by a
                // bare ROUTER thread (raw files of the same blobs).
                let folder = dataFolder + "/../cold-floor"
                if keys.isEmpty {
                    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
                    for (i, blob) in blobs.enumerated() { try rawWrite(blob, path: "\(folder)/\(i)") }
                    keys = blobs.indices.map { "\(folder)/\($0)" }
                }
                for path in keys { evict(path) }
                let reader = try echo.reader()
                defer { reader.close() }
                let start = monotonicSeconds()
                var total = 0
                for path in keys { total += try reader.read(path) }
                measure = Measure(bytes: total, seconds: monotonicSeconds() - start)
            default:  // "bare"
                measure = try echo.transfer(blobs)
            }
            print("round \(round + 1): \(variant) \(String(format: "%.0f", measure.megabytesPerSecond)) MB/s")
        }
    }

    /// A photo-like JPEG of about `count` bytes (noise over a gradient, quality 95, 4:2:0), distinct
    /// per seed: PutImage validates its whole structure, entropy-coded data included.
    static func jpegPayload(_ count: Int, seed: Int) throws -> [UInt8] {
        var state = UInt64(seed + 1) &* 0x9E37_79B9_7F4A_7C15
        func image(_ width: Int, _ height: Int) -> RGBImage {
            var pixels = [UInt8](repeating: 0, count: width * height * 3)
            for i in pixels.indices {
                state ^= state << 13; state ^= state >> 7; state ^= state << 17
                pixels[i] = UInt8(truncatingIfNeeded: (i / 3 % width) &+ Int(state & 63))
            }
            return RGBImage(width: width, height: height, pixels: pixels)
        }
        // Bytes per pixel measured on a sample, then the size scaled to it.
        let sample = try JPEG.encode(image(256, 256), quality: 95)
        let pixels = Double(count) / (Double(sample.count) / 65536)
        let width = max(16, Int((pixels * 4 / 3).squareRoot())), height = max(16, Int(pixels) / max(16, Int((pixels * 4 / 3).squareRoot())))
        return try JPEG.encode(image(width, height), quality: 95)
    }
}

