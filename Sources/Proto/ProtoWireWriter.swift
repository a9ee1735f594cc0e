/// The tag and length that precede a length-delimited field's bytes (for code that writes a
/// message's large fields itself, as GetImage does from its cache).
public func protoFieldHeader(number: UInt32, length: Int) -> [UInt8] {
    var writer = ProtoWireWriter()
    writer.tag(number, .lengthDelimited)
    writer.varint(UInt64(length))
    return writer.bytes
}

/// Appends protobuf wire-format primitives to a byte buffer.
struct ProtoWireWriter {
    /// Wire types of the tag's low three bits.
    enum WireType: UInt64 {
        case varint = 0
        case fixed64 = 1
        case lengthDelimited = 2
        case fixed32 = 5
    }

    private(set) var bytes: [UInt8] = []

    var isEmpty: Bool { bytes.isEmpty }

    mutating func tag(_ field: UInt32, _ type: WireType) {
        varint(UInt64(field) << 3 | type.rawValue)
    }

    /// Base-128 varint, least significant group first. int32 / int64 / enum values are written as
    /// their 64-bit two's complement, so a negative one always takes ten bytes.
    mutating func varint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    /// sint32's ZigZag mapping (0, -1, 1, -2 → 0, 1, 2, 3), so small negative numbers stay short.
    static func zigZag32(_ value: Int32) -> UInt64 {
        UInt64(UInt32(bitPattern: (value << 1) ^ (value >> 31)))
    }

    /// sint64's ZigZag mapping.
    static func zigZag64(_ value: Int64) -> UInt64 {
        UInt64(bitPattern: (value << 1) ^ (value >> 63))
    }

    /// fixed32 / sfixed32 / float: four bytes little-endian.
    mutating func fixed32(_ value: UInt32) {
        for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }

    /// fixed64 / sfixed64 / double: eight bytes little-endian.
    mutating func fixed64(_ value: UInt64) {
        for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }

    /// string / bytes / message / packed: the length as a varint, then the bytes.
    mutating func lengthDelimited(_ payload: some Collection<UInt8>) {
        varint(UInt64(payload.count))
        bytes.append(contentsOf: payload)
    }

    /// A complete length-delimited field.
    mutating func field(_ number: UInt32, lengthDelimited payload: some Collection<UInt8>) {
        tag(number, .lengthDelimited)
        lengthDelimited(payload)
    }
}
