import RPC

/// The bytes of a blob being stored: an array, or a photo still inside the request frame it
/// arrived in (stored from there without a copy).
public protocol BlobBytes: Sendable {
    var count: Int { get }
    /// Reads the bytes in place; the pointer is valid only inside `body`.
    func withBlobBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R
    /// The bytes as an array (a copy unless they are one already).
    var array: [UInt8] { get }
}

extension Array: BlobBytes where Element == UInt8 {
    public func withBlobBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        try withUnsafeBytes(body)
    }

    public var array: [UInt8] { self }
}

extension FrameBytes: BlobBytes {
    public func withBlobBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        try withUnsafeBytes { buffer throws(any Error) -> R in try body(buffer) }
    }

    public var array: [UInt8] { bytes }
}
