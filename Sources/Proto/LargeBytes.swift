import CProtobufC

/// Decoding of messages that carry large `bytes` fields (a photo in PutImageRequest, in
/// GetImageResponse) with one copy of those bytes instead of two.
///
/// protobuf-c's unpack copies every `bytes` field out of the input, and the Swift value copies
/// it again. For a top-level singular `bytes` field of at least `threshold` bytes, the input is
/// scanned first: protobuf-c unpacks the input without those fields, their slices of the input
/// are set into its struct afterwards, and the Swift conversion copies them once, straight out
/// of the input. Everything else (and any input the scan does not understand) is left to
/// protobuf-c, which judges it as before.
enum LargeBytes {
    /// Fields at least this long bypass protobuf-c's copy.
    static let threshold = 64 * 1024

    /// A field to set after the unpack: where its value is in the input.
    struct Slice {
        let field: UnsafePointer<ProtobufCFieldDescriptor>
        let range: Range<Int>
    }

    /// What to unpack (the input without the large fields) and the slices to set afterwards;
    /// nil when there is nothing to bypass or the input is not well-formed at the top level.
    static func plan(
        _ input: UnsafeRawBufferPointer, descriptor: UnsafePointer<ProtobufCMessageDescriptor>
    ) -> (reduced: [UInt8], slices: [Slice])? {
        guard input.count >= threshold else { return nil }
        var position = 0
        // Field number → its last occurrence (the value proto3 keeps for a singular field).
        var large: [UInt32: Slice] = [:]
        var removed: [Range<Int>] = []
        while position < input.count {
            let start = position
            guard let tag = varint(input, &position), tag >> 3 > 0, tag >> 3 <= UInt64(UInt32.max) else { return nil }
            let number = UInt32(tag >> 3)
            switch tag & 7 {
            case 0:
                guard varint(input, &position) != nil else { return nil }
            case 1:
                position += 8
            case 5:
                position += 4
            case 2:
                guard let length = varint(input, &position), length <= UInt64(input.count - position) else { return nil }
                let valueStart = position
                position += Int(length)
                guard length >= UInt64(threshold) else {
                    // A later, small occurrence wins over an earlier large one: protobuf-c keeps it.
                    large[number] = nil
                    continue
                }
                guard
                      let field = protobuf_c_message_descriptor_get_field(descriptor, UInt32(number)),
                      field.pointee.type == PROTOBUF_C_TYPE_BYTES, field.pointee.label == PROTOBUF_C_LABEL_NONE,
                      field.pointee.flags & UInt32(PROTOBUF_C_FIELD_FLAG_ONEOF.rawValue) == 0
                else { continue }
                // An earlier occurrence of the same field was replaced by this one.
                large[number] = Slice(field: field, range: valueStart..<position)
                removed.append(start..<position)
            default:
                return nil  // groups: left to protobuf-c
            }
            guard position <= input.count else { return nil }
        }
        guard !large.isEmpty else { return nil }
        var reduced: [UInt8] = []
        reduced.reserveCapacity(input.count - removed.reduce(0) { $0 + $1.count })
        var kept = 0
        for range in removed {
            reduced += input[kept..<range.lowerBound]
            kept = range.upperBound
        }
        reduced += input[kept..<input.count]
        return (reduced, Array(large.values))
    }

    /// Sets each slice into the unpacked struct `message`, pointing into `input`.
    static func apply(_ slices: [Slice], to message: UnsafeMutableRawPointer, input: UnsafeRawBufferPointer) {
        for slice in slices {
            let data = input.baseAddress!.advanced(by: slice.range.lowerBound).assumingMemoryBound(to: UInt8.self)
            (message + Int(slice.field.pointee.offset)).assumingMemoryBound(to: ProtobufCBinaryData.self).pointee =
                ProtobufCBinaryData(len: slice.range.count, data: UnsafeMutablePointer(mutating: data))
        }
    }

    private static func varint(_ input: UnsafeRawBufferPointer, _ position: inout Int) -> UInt64? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while position < input.count, shift < 64 {
            let byte = input[position]
            position += 1
            value |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return value }
            shift += 7
        }
        return nil
    }
}
