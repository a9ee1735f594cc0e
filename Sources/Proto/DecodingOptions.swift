/// Limits applied before untrusted bytes reach protobuf-c.
///
/// protobuf-c's unpack costs far more than the input for some shapes of it: every field it
/// reads takes a 32-byte scan entry, every unknown field is kept as a copy of its own, every
/// element of a repeated string is an allocation. Before unpacking, the bytes are walked once
/// (no allocation) and refused when they break one of these limits; the unpack itself then runs
/// in an arena that refuses to grow past `memoryBudget(forInputBytes:)`.
public struct DecodingOptions: Sendable, Hashable {
    /// Largest encoded message accepted, in bytes.
    public var maxBytes: Int
    /// Fields the message's types do not declare, in the whole message (nested ones included).
    public var maxUnknownFields: Int
    /// Values of one field in one message: the elements of a repeated field (packed or not),
    /// or the repeats of a singular one.
    public var maxValuesPerField: Int
    /// How deep messages may nest (the top-level message is depth 1).
    public var maxDepth: Int
    /// Memory any decode may take, whatever its size.
    public var memoryBudgetBaseBytes: Int
    /// Memory a decode may take in addition, per byte of input.
    public var memoryBudgetPerInputByte: Int

    /// Limits with the given size cap and the protocol's other defaults.
    public init(
        maxBytes: Int = 64 * 1024 * 1024, maxUnknownFields: Int = 1024, maxValuesPerField: Int = 65_536,
        maxDepth: Int = 32, memoryBudgetBaseBytes: Int = 1 << 20, memoryBudgetPerInputByte: Int = 4
    ) {
        self.maxBytes = maxBytes
        self.maxUnknownFields = maxUnknownFields
        self.maxValuesPerField = maxValuesPerField
        self.maxDepth = maxDepth
        self.memoryBudgetBaseBytes = memoryBudgetBaseBytes
        self.memoryBudgetPerInputByte = memoryBudgetPerInputByte
    }

    /// The memory protobuf-c may allocate to unpack `count` bytes: the base plus the per-byte
    /// allowance (a message of bulk strings and bytes needs about 1 byte per byte; one of small
    /// fields up to 4, which is what the allowance admits).
    public func memoryBudget(forInputBytes count: Int) -> Int {
        let (perByte, overflow) = count.multipliedReportingOverflow(by: memoryBudgetPerInputByte)
        guard !overflow else { return .max }
        let (total, overflowTotal) = memoryBudgetBaseBytes.addingReportingOverflow(perByte)
        return overflowTotal ? .max : total
    }

    /// 64 MiB, the protocol's default frame limit.
    public static let `default` = DecodingOptions()
}
