import Digest
import Proto
import RPC

/// Reads an image's bytes in ranges over RPC and hashes them (`fsck`, `verify`). The service
/// refuses (DATA_LOSS) a range whose blocks do not match their check or whose file is missing.
enum BlobRead {
    /// What reading one image found.
    struct Outcome {
        /// "sha256:<hex>" of every byte read; nil when the read stopped (`problem`, or gone).
        var checksum: String?
        /// Why the bytes could not all be read, if so.
        var problem: String?
        /// Bytes read.
        var bytes: Int64 = 0
        /// Deleted since it was listed.
        var gone = false
    }

    /// The image's info, nil when the image service does not have it.
    static func stat(_ key: String, images: RPCClient, options: CallOptions) async throws -> ImageInfo? {
        var request = StatImageRequest()
        request.key = key
        do {
            return try await images.call(ImageServiceRPC.statImage, request, options: options)
        } catch {
            guard error.code == .notFound else { throw error }
            return nil
        }
    }

    /// Reads every byte of `image` and hashes it, handing each range to `sink` too (a backup
    /// writes them as they come).
    static func hash(
        _ image: ImageInfo, images: RPCClient, timeout: UInt32, sink: ((UnsafeRawBufferPointer) throws -> Void)? = nil
    ) async throws -> Outcome {
        var hash = SHA256()
        var outcome = Outcome()
        while outcome.bytes < image.sizeBytes {
            var request = GetImageRequest()
            request.key = image.key
            request.offset = outcome.bytes
            request.length = min(ImageGetCommand.step, image.sizeBytes - outcome.bytes)
            let part: FrameBytes
            do {
                let (reply, data) = try await images.call(
                    ImageServiceRPC.getImage, request, largeBytesField: GetImageResponse.dataField,
                    options: .init(timeoutMilliseconds: max(timeout, 60_000)))
                part = data ?? FrameBytes(reply.data)
            } catch {
                if error.code == .notFound {
                    outcome.gone = true
                    return outcome
                }
                guard error.code == .dataLoss else { throw error }
                outcome.problem = error.message
                return outcome
            }
            guard !part.isEmpty else {
                outcome.problem = "the service sent no bytes at offset \(outcome.bytes)"
                return outcome
            }
            try part.withUnsafeBytes { bytes in
                hash.update(bytes)
                try sink?(bytes)
            }
            outcome.bytes += Int64(part.count)
        }
        outcome.checksum = hash.checksum()
        return outcome
    }
}
