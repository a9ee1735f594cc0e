import CProtobufC
import ProtoWire

/// Decoding and encoding of messages that carry large `bytes` fields (a photo in
/// PutImageRequest, in GetImageResponse) with one copy of those bytes instead of two.
///
/// Encoding: the top-level message is filled with its large bytes fields left empty (a
/// marker in each says which bytes belong there), protobuf-c packs the rest, and the output
/// is written with each field spliced in where protobuf-c would have put it (fields in
/// ascending number), so the bytes are the same as protobuf-c's own.
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

    /// A deferred field found in its place: its number and bytes.
    struct DeferredField {
        let number: UInt32
        let bytes: [UInt8]
    }

    /// The top-level fields holding `deferred` markers, in field order; nil when a marker is
    /// anywhere else (the caller then encodes without deferring).
    static func deferredFields(
        _ deferred: [(marker: UnsafeMutableRawPointer, bytes: [UInt8])], in message: UnsafeMutableRawPointer
    ) -> [DeferredField]? {
        let descriptor = message.assumingMemoryBound(to: ProtobufCMessage.self).pointee.descriptor!
        var found: [DeferredField] = []
        for i in 0..<Int(descriptor.pointee.n_fields) {
            let field = descriptor.pointee.fields[i]
            guard field.type == PROTOBUF_C_TYPE_BYTES, field.label != PROTOBUF_C_LABEL_REPEATED else { continue }
            let value = (message + Int(field.offset)).assumingMemoryBound(to: ProtobufCBinaryData.self).pointee
            guard value.len == 0, let data = value.data,
                  let entry = deferred.first(where: { $0.marker == UnsafeMutableRawPointer(data) })
            else { continue }
            guard field.label == PROTOBUF_C_LABEL_NONE, field.flags & UInt32(PROTOBUF_C_FIELD_FLAG_ONEOF.rawValue) == 0 else {
                return nil
            }
            found.append(DeferredField(number: field.id, bytes: entry.bytes))
        }
        guard found.count == deferred.count else { return nil }
        return found.sorted { $0.number < $1.number }
    }

    /// The tag and length in front of a field's bytes.
    static func header(_ field: DeferredField) -> [UInt8] {
        protoFieldHeader(number: field.number, length: field.bytes.count)
    }

    /// The size of `packed` with `fields` spliced in.
    static func splicedSize(_ packed: [UInt8], _ fields: [DeferredField]) -> Int {
        packed.count + fields.reduce(0) { $0 + header($1).count + $1.bytes.count }
    }

    /// Writes `packed` (protobuf-c's output without the fields) with `fields` inserted before
    /// the first packed field of a higher number; `target` holds exactly `splicedSize`.
    static func splice(_ packed: [UInt8], _ fields: [DeferredField], into target: UnsafeMutableRawBufferPointer) {
        let total = target.count
        var written = 0
        func write(_ bytes: UnsafeRawBufferPointer) {
            guard bytes.count > 0 else { return }
            (target.baseAddress! + written).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
            written += bytes.count
        }
        packed.withUnsafeBytes { input in
            var position = 0, copied = 0
            var pending = fields[...]
            while position < input.count, !pending.isEmpty {
                let start = position
                guard let tag = varint(input, &position) else { break }
                let number = UInt32(truncatingIfNeeded: tag >> 3)
                while let next = pending.first, next.number < number {
                    write(UnsafeRawBufferPointer(rebasing: input[copied..<start]))
                    copied = start
                    header(next).withUnsafeBytes { write($0) }
                    next.bytes.withUnsafeBytes { write($0) }
                    pending = pending.dropFirst()
                }
                switch tag & 7 {
                case 0: _ = varint(input, &position)
                case 1: position += 8
                case 5: position += 4
                case 2: position += Int(varint(input, &position) ?? 0)
                default: position = input.count
                }
            }
            write(UnsafeRawBufferPointer(rebasing: input[copied...]))
            for next in pending {
                header(next).withUnsafeBytes { write($0) }
                next.bytes.withUnsafeBytes { write($0) }
            }
        }
        precondition(written == total, "spliced \(written) bytes of \(total)")
    }

    private static func varint(_ input: UnsafeRawBufferPointer, _ position: inout Int) -> UInt64? {
        Varint.read(input, at: &position)
    }
}
