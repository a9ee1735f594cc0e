import CProtobufC

/// A generated message's link to its protobuf-c struct (Generated/*+CBridge.pb.swift).
protocol CBridgedMessage: ProtoMessage {
    associatedtype CType
    static func cInit(_ m: UnsafeMutablePointer<CType>)
    /// Unpacks with `allocator` (the decode's arena, which frees everything at once).
    static func cUnpack(
        _ allocator: UnsafeMutablePointer<ProtobufCAllocator>?, _ count: Int, _ data: UnsafePointer<UInt8>
    ) -> UnsafeMutablePointer<CType>?
    init(c m: UnsafePointer<CType>)
    func fill(_ m: UnsafeMutablePointer<CType>, _ arena: Arena)
}

extension CBridgedMessage {
    /// Packs with protobuf-c straight into the caller's memory.
    public func serialize(into allocate: (Int) -> UnsafeMutableRawBufferPointer?) -> [UInt8]? {
        CBridge.encode(self, into: allocate)
    }

    /// Decodes with protobuf-c straight from `buffer`: no copy of the input.
    public init(serializedBuffer buffer: UnsafeRawBufferPointer, options: DecodingOptions) throws(ProtoDecodingError) {
        self = try CBridge.decode(Self.self, buffer, options: options).message
    }

    /// Decodes with protobuf-c, leaving a large `field` where it lies.
    public static func decode(
        _ buffer: UnsafeRawBufferPointer, options: DecodingOptions, leavingLargeBytesField field: UInt32
    ) throws(ProtoDecodingError) -> (message: Self, field: Range<Int>?) {
        try CBridge.decode(Self.self, buffer, options: options, leaving: field)
    }
}

/// Conversions between Swift values and protobuf-c structs.
enum CBridge {
    static func encode<M: CBridgedMessage>(
        _ message: M, into allocate: (Int) -> UnsafeMutableRawBufferPointer?, spliceLargeBytes: Bool = true
    ) -> [UInt8]? {
        // Large top-level bytes fields are left out of protobuf-c's pack and spliced in as the
        // packed output is written: their data is copied once, into `allocate`'s memory.
        // (Without splicing, protobuf-c packs everything: what the tests hold the splice to.)
        let deferring = Arena(deferLargeBytes: spliceLargeBytes)
        var c = deferring.message(message)
        var arena = deferring
        if !deferring.deferred.isEmpty {
            if let fields = LargeBytes.deferredFields(deferring.deferred, in: UnsafeMutableRawPointer(c)) {
                let base = UnsafeMutableRawPointer(c).assumingMemoryBound(to: ProtobufCMessage.self)
                let size = protobuf_c_message_get_packed_size(base)
                let packed = [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
                    count = size > 0 ? protobuf_c_message_pack(base, buffer.baseAddress!) : 0
                }
                let total = LargeBytes.splicedSize(packed, fields)
                guard let target = allocate(total) else {
                    return [UInt8](unsafeUninitializedCapacity: total) { buffer, count in
                        LargeBytes.splice(packed, fields, into: UnsafeMutableRawBufferPointer(buffer))
                        count = total
                    }
                }
                precondition(target.count == total, "serialize(into:) was given \(target.count) bytes for \(total)")
                LargeBytes.splice(packed, fields, into: target)
                return nil
            }
            // A marker somewhere the splice cannot reach: encode again, copying everything.
            arena = Arena()
            c = arena.message(message)
        }
        let base = UnsafeMutableRawPointer(c).assumingMemoryBound(to: ProtobufCMessage.self)
        let size = protobuf_c_message_get_packed_size(base)
        // The struct lives in the arena: keep it until protobuf-c has packed it.
        return withExtendedLifetime(arena) { () -> [UInt8]? in
            guard let target = allocate(size) else {
                guard size > 0 else { return [] }
                return [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
                    count = protobuf_c_message_pack(base, buffer.baseAddress!)
                }
            }
            precondition(target.count == size, "serialize(into:) was given \(target.count) bytes for \(size)")
            guard size > 0 else { return nil }
            let packed = protobuf_c_message_pack(base, target.baseAddress!.assumingMemoryBound(to: UInt8.self))
            precondition(packed == size, "protobuf-c packed \(packed) bytes of \(size)")
            return nil
        }
    }

    /// The encoding as an array (`encode(_:into:)` with no memory of the caller's).
    static func encode<M: CBridgedMessage>(_ message: M) -> [UInt8] {
        encode(message, into: { _ in nil }) ?? []
    }

    static func decode<M: CBridgedMessage>(
        _ type: M.Type, _ bytes: [UInt8], options: DecodingOptions
    ) throws(ProtoDecodingError) -> M {
        let result = bytes.withUnsafeBytes { input in
            Result { () throws(ProtoDecodingError) -> M in try decode(type, input, options: options).message }
        }
        return try result.get()
    }

    /// Decodes `input`; a large top-level bytes field numbered `leaving` is left empty and its
    /// range in `input` returned.
    static func decode<M: CBridgedMessage>(
        _ type: M.Type, _ input: UnsafeRawBufferPointer, options: DecodingOptions, leaving: UInt32? = nil
    ) throws(ProtoDecodingError) -> (message: M, field: Range<Int>?) {
        guard input.count <= options.maxBytes else {
            throw .tooLarge(type: M.protoName, size: input.count, limit: options.maxBytes)
        }
        // protobuf-c allocates the unpacked message piece by piece; an arena serves those
        // pieces from one chunk and frees them together (its free is a no-op), so a decode costs
        // one allocation instead of one per string and sub-message.
        let arena = Arena()
        var allocator = ProtobufCAllocator(
            alloc: { data, size in
                Unmanaged<Arena>.fromOpaque(data!).takeUnretainedValue().raw(bytes: size)
            },
            free: { _, _ in },
            allocator_data: Unmanaged.passUnretained(arena).toOpaque())
        let plan = input.count < LargeBytes.threshold
            ? nil : ProtoRegistry.messageDescriptor(M.protoName).flatMap { LargeBytes.plan(input, descriptor: $0) }
        let decoded: (M, Range<Int>?)? = withExtendedLifetime(arena) {
            func unpack(_ buffer: UnsafeRawBufferPointer) -> UnsafeMutablePointer<M.CType>? {
                // protobuf-c wants a valid pointer even for zero bytes.
                var empty: UInt8 = 0
                if let base = buffer.baseAddress, buffer.count > 0 {
                    return M.cUnpack(&allocator, buffer.count, base.assumingMemoryBound(to: UInt8.self))
                }
                return M.cUnpack(&allocator, 0, &empty)
            }
            guard let plan else { return unpack(input).map { (M(c: $0), nil) } }
            let unpacked = plan.reduced.withUnsafeBytes { unpack($0) }
            guard let unpacked else { return nil }
            let left = plan.slices.first { $0.field.pointee.id == leaving }
            LargeBytes.apply(plan.slices.filter { $0.field.pointee.id != leaving }, to: UnsafeMutableRawPointer(unpacked), input: input)
            return (M(c: unpacked), left?.range)
        }
        guard let decoded else { throw .malformed(type: M.protoName, size: input.count) }
        return decoded
    }

    static func string(_ c: UnsafePointer<CChar>?) -> String {
        guard let c else { return "" }
        return String(cString: c)
    }

    static func bytes(_ c: ProtobufCBinaryData) -> [UInt8] {
        guard c.len > 0, let data = c.data else { return [] }
        return [UInt8](unsafeUninitializedCapacity: c.len) { buffer, count in
            UnsafeMutableRawPointer(buffer.baseAddress!).copyMemory(from: data, byteCount: c.len)
            count = c.len
        }
    }

    static func array<T, V>(_ c: UnsafeMutablePointer<T>?, _ count: Int, _ convert: (T) -> V) -> [V] {
        guard let c, count > 0 else { return [] }
        return UnsafeBufferPointer(start: c, count: count).map(convert)
    }
}

/// Memory for one encode: every C string, array and struct, freed together.
///
/// A bump allocator: small pieces come out of one chunk (most messages fit in it, so an
/// encode costs one allocation here instead of one per string and struct); large pieces, such
/// as a bytes field, get blocks of their own.
final class Arena {
    private static let chunkSize = 1024
    private static let ownBlockOver = 256
    private var chunk: UnsafeMutableRawPointer?
    private var used = 0
    private var blocks: [UnsafeMutableRawPointer] = []
    /// Whether large bytes of the top-level message are recorded instead of copied.
    private let deferLargeBytes: Bool
    /// Messages being filled (1 while the top-level message is) and arrays being converted.
    private var depth = 0
    private var arrayDepth = 0
    /// Bytes left out of the C struct, each under a marker address stored in its field.
    private(set) var deferred: [(marker: UnsafeMutableRawPointer, bytes: [UInt8])] = []

    init(deferLargeBytes: Bool = false) {
        self.deferLargeBytes = deferLargeBytes
    }

    deinit {
        chunk?.deallocate()
        for block in blocks { block.deallocate() }
    }

    private func allocate(bytes: Int, alignment: Int) -> UnsafeMutableRawPointer {
        let bytes = max(bytes, 1)
        if bytes <= Self.ownBlockOver {
            let start = (used + alignment - 1) & ~(alignment - 1)
            if let chunk, start + bytes <= Self.chunkSize {
                used = start + bytes
                return chunk + start
            }
            if chunk == nil {
                let fresh = UnsafeMutableRawPointer.allocate(byteCount: Self.chunkSize, alignment: 16)
                chunk = fresh
                used = bytes
                return fresh
            }
        }
        let block = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: max(alignment, 16))
        blocks.append(block)
        return block
    }

    /// Memory for protobuf-c's unpack, aligned as malloc's.
    func raw(bytes: Int) -> UnsafeMutableRawPointer {
        allocate(bytes: bytes, alignment: 16)
    }

    func string(_ s: String) -> UnsafeMutablePointer<CChar> {
        var s = s
        return s.withUTF8 { utf8 in
            let p = allocate(bytes: utf8.count + 1, alignment: 1).bindMemory(to: CChar.self, capacity: utf8.count + 1)
            if let base = utf8.baseAddress {
                UnsafeMutableRawPointer(p).copyMemory(from: base, byteCount: utf8.count)
            }
            p[utf8.count] = 0
            return p
        }
    }

    func bytes(_ b: [UInt8]) -> ProtobufCBinaryData {
        guard !b.isEmpty else { return ProtobufCBinaryData(len: 0, data: nil) }
        if deferLargeBytes && depth == 1 && arrayDepth == 0 && b.count >= LargeBytes.threshold {
            // Length 0, so protobuf-c packs nothing for it; the marker says which bytes go there.
            let marker = allocate(bytes: 1, alignment: 1)
            deferred.append((marker, b))
            return ProtobufCBinaryData(len: 0, data: marker.assumingMemoryBound(to: UInt8.self))
        }
        let p = allocate(bytes: b.count, alignment: 1).bindMemory(to: UInt8.self, capacity: b.count)
        b.withUnsafeBufferPointer { p.update(from: $0.baseAddress!, count: b.count) }
        return ProtobufCBinaryData(len: b.count, data: p)
    }

    func array<V, T>(_ values: [V], _ convert: (V) -> T) -> UnsafeMutablePointer<T>? {
        guard !values.isEmpty else { return nil }
        arrayDepth += 1
        defer { arrayDepth -= 1 }
        let p = allocate(bytes: MemoryLayout<T>.stride * values.count, alignment: MemoryLayout<T>.alignment)
            .bindMemory(to: T.self, capacity: values.count)
        for (i, v) in values.enumerated() { (p + i).initialize(to: convert(v)) }
        return p
    }

    func message<M: CBridgedMessage>(_ m: M) -> UnsafeMutablePointer<M.CType> {
        let p = allocate(bytes: MemoryLayout<M.CType>.size, alignment: MemoryLayout<M.CType>.alignment)
            .bindMemory(to: M.CType.self, capacity: 1)
        M.cInit(p)
        depth += 1
        defer { depth -= 1 }
        m.fill(p, self)
        return p
    }
}
