/// Limits applied before untrusted bytes reach protobuf-c.
public struct DecodingOptions: Sendable, Hashable {
    /// Largest encoded message accepted, in bytes.
    public var maxBytes: Int

    /// Limits with the given size cap.
    public init(maxBytes: Int = 64 * 1024 * 1024) {
        self.maxBytes = maxBytes
    }

    /// 64 MiB, the protocol's default frame limit.
    public static let `default` = DecodingOptions()
}
