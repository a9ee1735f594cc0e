import Proto
import RPC

/// Reads a whole image from the image service: one GetImage, or for an image larger than one
/// reply can hold, StatImage and ranged reads. Both workers read their originals with it.
public struct ImageReader: Sendable {
    /// How much of an image one GetImage reads (below the service's frame limit).
    public static let readChunkBytes: Int64 = 8 << 20
    /// The smallest read it halves down to for a service whose replies are smaller.
    public static let smallestReadBytes: Int64 = 64 << 10

    let connection: ClientConnection

    /// A reader over `connection` (to the image service).
    public init(connection: ClientConnection) {
        self.connection = connection
    }

    /// The whole image; nil when there is no such image. One GetImage of the whole blob,
    /// or, for an original larger than one reply can hold (8 RESOURCE_EXHAUSTED without a
    /// retry_after), StatImage and ranged reads.
    public func read(_ key: String) async throws -> [UInt8]? {
        var whole = GetImageRequest()
        whole.key = key
        do {
            return try await connection.client.call(ImageServiceRPC.getImage, whole, options: CallOptions(timeoutMilliseconds: 30_000)).data
        } catch {
            if error.code == .notFound { return nil }
            guard error.code == .resourceExhausted && error.retryAfterMilliseconds == 0 else { throw error }
        }
        return try await readInRanges(key)
    }

    /// The whole image in ranged reads of `readChunkBytes` (halved while the service says a
    /// read is too large for its replies); nil when there is no such image.
    func readInRanges(_ key: String) async throws -> [UInt8]? {
        guard let size = try await size(of: key) else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Int(size))
        try await append(key, from: 0, to: size, into: &bytes)
        return bytes
    }

    /// The image's size in bytes (StatImage); nil when there is no such image.
    public func size(of key: String) async throws -> Int64? {
        try await info(of: key)?.sizeBytes
    }

    /// What the image service knows of the image (StatImage: its size, its content type as
    /// sniffed when it was stored, …); nil when there is no such image.
    public func info(of key: String) async throws -> ImageInfo? {
        var stat = StatImageRequest()
        stat.key = key
        do {
            return try await connection.client.call(ImageServiceRPC.statImage, stat)
        } catch {
            if error.code == .notFound { return nil }
            throw error
        }
    }

    /// Appends the image's bytes from `start` up to `end` to `bytes`, in ranged reads of
    /// `readChunkBytes` (halved while the service says a read is too large for its replies).
    /// Throws 5 NOT_FOUND when the image is gone, 15 DATA_LOSS when it ends before `end`. Each
    /// read may take `timeoutMilliseconds`.
    public func append(
        _ key: String, from start: Int64, to end: Int64, into bytes: inout [UInt8], timeoutMilliseconds: UInt32 = 30_000
    ) async throws {
        let client = connection.client
        var chunk = Self.readChunkBytes, offset = start
        while offset < end {
            var get = GetImageRequest()
            get.key = key
            get.offset = offset
            get.length = min(chunk, end - offset)
            let part: FrameBytes
            do {
                let (reply, data) = try await client.call(
                    ImageServiceRPC.getImage, get, largeBytesField: GetImageResponse.dataField,
                    options: CallOptions(timeoutMilliseconds: timeoutMilliseconds))
                part = data ?? FrameBytes(reply.data)
            } catch {
                // A service with a smaller --max-message-bytes: halve the reads until they fit.
                guard error.code == .resourceExhausted && error.retryAfterMilliseconds == 0 && chunk > Self.smallestReadBytes else { throw error }
                chunk /= 2
                continue
            }
            guard !part.isEmpty else {
                throw RPCError(.dataLoss, "image \(key) ended at \(offset) of the \(end) bytes read")
            }
            part.withUnsafeBytes { bytes.append(contentsOf: $0) }
            offset += Int64(part.count)
        }
    }
}
