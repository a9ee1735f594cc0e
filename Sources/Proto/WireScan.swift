import CProtobufC
import Foundation

/// One walk over wire bytes, before protobuf-c unpacks them, that refuses input whose unpack
/// would cost far more than its size (DecodingOptions): too many unknown fields, too many values
/// of one field, nesting too deep, or more memory than the budget by protobuf-c's own accounting;
/// and text protobuf-c would cut short: a string field holding a NUL character (it keeps strings
/// NUL-terminated, so "a\0b" would arrive as "a", silently).
///
/// It allocates nothing and stops at the first limit it passes, so refusing a hostile body costs
/// a walk over the part of it that broke the limit (about 130 KB of a 4 MiB body of empty
/// strings), not its unpack. Input it cannot read (a bad varint, a truncated field, a group) is
/// left to protobuf-c, which reports it as malformed.
struct WireScan {
    private let options: DecodingOptions
    private let budget: Int
    /// Unknown fields seen so far, in the whole message.
    private var unknownFields = 0
    /// What protobuf-c will allocate, counted as the walk goes (see `Cost`).
    private var memory = 0

    /// Checks `input` as a `descriptor` message; throws `.overLimit` naming what broke a limit.
    static func check(
        _ input: UnsafeRawBufferPointer, as descriptor: UnsafePointer<ProtobufCMessageDescriptor>,
        options: DecodingOptions
    ) throws(ProtoDecodingError) {
        guard let base = input.baseAddress, input.count > 0 else { return }
        var scan = WireScan(options: options, budget: options.memoryBudget(forInputBytes: input.count))
        let start = base.assumingMemoryBound(to: UInt8.self)
        guard let refusal = scan.message(start, start + input.count, descriptor, depth: 1) else { return }
        let type = String(cString: descriptor.pointee.name)
        if case .nul = refusal.kind { throw .nulInText(type: type, field: ([type] + refusal.path).joined(separator: ".")) }
        throw .overLimit(type: type, reason: refusal.reason(type: type, size: input.count, options: options))
    }

    /// Why the walk stopped; `path` holds field names from the top-level message down.
    struct Refusal {
        enum Kind {
            case unknownFields(number: UInt32, type: String)
            case values
            case depth
            case memory
            /// A string field holds a NUL character.
            case nul
        }

        let kind: Kind
        var path: [String]

        func reason(type: String, size: Int, options: DecodingOptions) -> String {
            let at = ([type] + path).joined(separator: ".")
            switch kind {
            case let .unknownFields(number, inType):
                return "\(type) has more than \(options.maxUnknownFields) unknown fields (field \(number) of \(inType) is one); at most \(options.maxUnknownFields) are accepted"
            case .values:
                return "\(at) has more than \(options.maxValuesPerField) values; at most \(options.maxValuesPerField) are accepted in one message"
            case .depth:
                return "\(type) nests messages more than \(options.maxDepth) deep (at \(at)); at most \(options.maxDepth) levels are accepted"
            case .nul:
                return "\(at) holds a NUL character (U+0000)"
            case .memory:
                return "\(type) (\(size) bytes) would take more than \(options.memoryBudget(forInputBytes: size)) bytes of memory to decode (\(options.memoryBudgetBaseBytes) + \(options.memoryBudgetPerInputByte) per input byte), reached in \(at)"
            }
        }
    }

    /// What protobuf-c 1.4.1 allocates while unpacking, rounded as the arena rounds (8 bytes).
    enum Cost {
        /// Each field read takes a scan entry (protobuf-c.c's `ScannedMember`): the first 16 of a message on
        /// protobuf-c's stack, then in slabs of 32, 64, 128… entries allocated as they fill.
        static let scannedMember = 32
        static let entriesOnStack = 16
        /// Each unknown field is kept as a `ProtobufCMessageUnknownField` plus a copy of its bytes.
        static let unknownField = 24

        static func rounded(_ bytes: Int) -> Int { (bytes + 7) & ~7 }

        /// The size of one element of a repeated field's array.
        static func element(_ type: ProtobufCType) -> Int {
            switch type {
            case PROTOBUF_C_TYPE_INT64, PROTOBUF_C_TYPE_SINT64, PROTOBUF_C_TYPE_SFIXED64, PROTOBUF_C_TYPE_UINT64,
                 PROTOBUF_C_TYPE_FIXED64, PROTOBUF_C_TYPE_DOUBLE, PROTOBUF_C_TYPE_STRING, PROTOBUF_C_TYPE_MESSAGE:
                8
            case PROTOBUF_C_TYPE_BYTES: MemoryLayout<ProtobufCBinaryData>.stride
            default: 4
            }
        }
    }

    private mutating func charge(_ bytes: Int) -> Bool {
        memory += bytes
        return memory > budget
    }

    /// Walks one message's bytes in `start..<end`.
    private mutating func message(
        _ start: UnsafePointer<UInt8>, _ end: UnsafePointer<UInt8>,
        _ descriptor: UnsafePointer<ProtobufCMessageDescriptor>, depth: Int
    ) -> Refusal? {
        guard depth <= options.maxDepth else { return Refusal(kind: .depth, path: []) }
        if charge(Cost.rounded(descriptor.pointee.sizeof_message)) { return Refusal(kind: .memory, path: []) }
        // nil for a message without fields: every field it meets is unknown.
        let fields = descriptor.pointee.fields
        let fieldCount = Int(descriptor.pointee.n_fields)
        return withUnsafeTemporaryAllocation(of: Int.self, capacity: max(1, fieldCount)) { values -> Refusal? in
            values.initialize(repeating: 0)
            var entries = 0
            var entryCapacity = Cost.entriesOnStack
            var slab = Cost.entriesOnStack
            var at = start
            while at < end {
                guard let tag = Self.varint(&at, end), tag >> 3 > 0, tag >> 3 <= UInt64(UInt32.max) else { return nil }
                let number = UInt32(tag >> 3)
                let wireType = tag & 7
                // The value: for length-delimited fields, `payload` is what follows the length.
                let valueStart = at
                var payload: (start: UnsafePointer<UInt8>, count: Int)?
                switch wireType {
                case 0:
                    guard Self.varint(&at, end) != nil else { return nil }
                case 1:
                    guard end - at >= 8 else { return nil }
                    at += 8
                case 5:
                    guard end - at >= 4 else { return nil }
                    at += 4
                case 2:
                    guard let length = Self.varint(&at, end), length <= UInt64(end - at) else { return nil }
                    payload = (at, Int(length))
                    at += Int(length)
                default:
                    return nil  // groups and invalid wire types: protobuf-c refuses them
                }
                entries += 1
                if entries > entryCapacity {
                    // The next slab, twice the size of the one before.
                    slab *= 2
                    entryCapacity += slab
                    if charge(slab * Cost.scannedMember) { return Refusal(kind: .memory, path: []) }
                }
                guard let fields, let field = protobuf_c_message_descriptor_get_field(descriptor, number) else {
                    unknownFields += 1
                    if unknownFields > options.maxUnknownFields {
                        let type = String(cString: descriptor.pointee.name)
                        return Refusal(kind: .unknownFields(number: number, type: type), path: [])
                    }
                    if charge(Cost.unknownField + Cost.rounded(at - valueStart)) { return Refusal(kind: .memory, path: []) }
                    continue
                }
                let index = fields.distance(to: field)
                let type = field.pointee.type
                let repeated = field.pointee.label == PROTOBUF_C_LABEL_REPEATED
                var count = 1
                var bytes = 0
                if let payload {
                    switch type {
                    case PROTOBUF_C_TYPE_STRING:
                        bytes = Cost.rounded(payload.count + 1)
                        if payload.count > 0, memchr(payload.start, 0, payload.count) != nil {
                            return Refusal(kind: .nul, path: [String(cString: field.pointee.name)])
                        }
                    case PROTOBUF_C_TYPE_BYTES:
                        bytes = Cost.rounded(payload.count)
                    case PROTOBUF_C_TYPE_MESSAGE:
                        if let sub = field.pointee.descriptor?.assumingMemoryBound(to: ProtobufCMessageDescriptor.self),
                           var refusal = message(payload.start, payload.start + payload.count, sub, depth: depth + 1) {
                            refusal.path.insert(String(cString: field.pointee.name), at: 0)
                            return refusal
                        }
                    default:
                        // A packed run of scalars: protobuf-c counts its elements into the array.
                        if repeated { count = Self.packedCount(type, payload.start, payload.count) }
                    }
                }
                values[index] += count
                if values[index] > options.maxValuesPerField {
                    return Refusal(kind: .values, path: [String(cString: field.pointee.name)])
                }
                if repeated { bytes += count * Cost.element(type) }
                if charge(bytes) { return Refusal(kind: .memory, path: [String(cString: field.pointee.name)]) }
            }
            return nil
        }
    }

    /// Elements in a packed run of `count` bytes, as protobuf-c counts them.
    private static func packedCount(_ type: ProtobufCType, _ start: UnsafePointer<UInt8>, _ count: Int) -> Int {
        switch type {
        case PROTOBUF_C_TYPE_SFIXED32, PROTOBUF_C_TYPE_FIXED32, PROTOBUF_C_TYPE_FLOAT:
            return count / 4
        case PROTOBUF_C_TYPE_SFIXED64, PROTOBUF_C_TYPE_FIXED64, PROTOBUF_C_TYPE_DOUBLE:
            return count / 8
        default:
            // Varints: one ends at each byte without the continuation bit.
            var ends = 0
            for i in 0..<count where start[i] & 0x80 == 0 { ends += 1 }
            return ends
        }
    }

    private static func varint(_ at: inout UnsafePointer<UInt8>, _ end: UnsafePointer<UInt8>) -> UInt64? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while at < end, shift < 64 {
            let byte = at.pointee
            at += 1
            value |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return value }
            shift += 7
        }
        return nil
    }
}
