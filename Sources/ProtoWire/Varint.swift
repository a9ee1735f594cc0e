/// The protobuf wire format's base-128 varint, in one place for the message layer (`Proto`)
/// and the generator (`ProtoGenSwift`, which cannot depend on the messages it writes).
public enum Varint {
    /// Reads the varint at `position` in `bytes` and moves `position` past it; nil when the
    /// bytes end before its last byte or it runs past 64 bits.
    @inlinable
    public static func read<Bytes: RandomAccessCollection>(_ bytes: Bytes, at position: inout Bytes.Index) -> UInt64?
    where Bytes.Element == UInt8 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while position < bytes.endIndex, shift < 64 {
            let byte = bytes[position]
            bytes.formIndex(after: &position)
            value |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return value }
            shift += 7
        }
        return nil
    }
}
