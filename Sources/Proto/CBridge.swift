import CProtobufC

/// A generated message's link to its protobuf-c struct (the `extension … : CBridgedMessage` at the end of each Generated/*/*.pb.swift).
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
    /// protobuf-c's descriptor of the message, read from a struct its init function fills:
    /// no lookup by name (a string hash) on every decode.
    static var cDescriptor: UnsafePointer<ProtobufCMessageDescriptor> {
        withUnsafeTemporaryAllocation(of: CType.self, capacity: 1) { buffer in
            cInit(buffer.baseAddress!)
            return UnsafeRawPointer(buffer.baseAddress!).assumingMemoryBound(to: ProtobufCMessage.self).pointee.descriptor
        }
    }

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
                // Not Array(unsafeUninitializedCapacity: 0), which writes the shared empty array
                // (ZMQ's Frame.swift says why).
                let packed = size == 0 ? [] : [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
                    count = protobuf_c_message_pack(base, buffer.baseAddress!)
                }
                let total = LargeBytes.splicedSize(packed, fields)
                guard let target = allocate(total) else {
                    guard total > 0 else { return [] }
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
        let descriptor = M.cDescriptor
        try WireScan.check(input, as: descriptor, options: options)
        // protobuf-c allocates the unpacked message piece by piece; an arena serves those
        // pieces from a few chunks and frees them together (its free is a no-op), within the
        // budget the scan has just checked protobuf-c's needs against.
        let arena = Arena(budget: options.memoryBudget(forInputBytes: input.count))
        let decoded = unpack(type, input, leaving: leaving, descriptor: descriptor, arena: arena)
        guard let decoded else {
            guard !arena.exhausted else {
                let budget = options.memoryBudget(forInputBytes: input.count)
                throw .overLimit(
                    type: M.protoName,
                    reason: "\(M.protoName) (\(input.count) bytes) took more than \(budget) bytes of memory to decode (\(options.memoryBudgetBaseBytes) + \(options.memoryBudgetPerInputByte) per input byte)")
            }
            throw .malformed(type: M.protoName, size: input.count)
        }
        return decoded
    }

    /// protobuf-c's unpack into `arena` and the conversion to Swift; nil when protobuf-c fails.
    static func unpack<M: CBridgedMessage>(
        _ type: M.Type, _ input: UnsafeRawBufferPointer, leaving: UInt32?,
        descriptor: UnsafePointer<ProtobufCMessageDescriptor>, arena: Arena
    ) -> (message: M, field: Range<Int>?)? {
        var allocator = ProtobufCAllocator(
            alloc: { data, size in
                Unmanaged<Arena>.fromOpaque(data!).takeUnretainedValue().raw(bytes: size)
            },
            free: { _, _ in },
            allocator_data: Unmanaged.passUnretained(arena).toOpaque())
        let plan = input.count < LargeBytes.threshold ? nil : LargeBytes.plan(input, descriptor: descriptor)
        return withExtendedLifetime(arena) {
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

/// Memory for one encode or decode: every C string, array and struct, freed together.
///
/// A bump allocator over chunks that double in size (1 KiB up to 1 MiB), so a message costs one
/// system allocation when small and a few dozen when huge, instead of one per string and
/// struct; a piece too large for a chunk gets a block of its own. A decode's arena has a budget:
/// past it, it hands protobuf-c no more memory (which then fails the unpack cleanly).
final class Arena {
    private static let firstChunkSize = 1024
    private static let largestChunkSize = 1 << 20
    private var chunk: UnsafeMutableRawPointer?
    private var chunkSize = 0
    private var used = 0
    /// The first chunk, and every later system allocation: most messages fit in the first,
    /// so the array (an allocation of its own) is seldom made.
    private var first: UnsafeMutableRawPointer?
    private var blocks: [UnsafeMutableRawPointer] = []
    /// Bytes handed out (padding included) and the most that may be.
    private(set) var allocatedBytes = 0
    private let budget: Int
    /// Whether a piece was refused for the budget.
    private(set) var exhausted = false
    /// protobuf-c's requests for memory, counted for the tests.
    private(set) var pieces = 0
    /// Whether large bytes of the top-level message are recorded instead of copied.
    private let deferLargeBytes: Bool
    /// Messages being filled (1 while the top-level message is) and arrays being converted.
    private var depth = 0
    private var arrayDepth = 0
    /// Bytes left out of the C struct, each under a marker address stored in its field.
    private(set) var deferred: [(marker: UnsafeMutableRawPointer, bytes: [UInt8])] = []

    init(deferLargeBytes: Bool = false, budget: Int = .max) {
        self.deferLargeBytes = deferLargeBytes
        self.budget = budget
    }

    deinit {
        first?.deallocate()
        for block in blocks { block.deallocate() }
    }

    /// System allocations made so far.
    var systemAllocations: Int { (first == nil ? 0 : 1) + blocks.count }

    private func allocate(bytes: Int, alignment: Int) -> UnsafeMutableRawPointer? {
        let bytes = max(bytes, 1)
        let start = (used + alignment - 1) & ~(alignment - 1)
        let (total, overflow) = allocatedBytes.addingReportingOverflow(bytes + (start - used))
        guard !overflow, total <= budget else {
            exhausted = true
            return nil
        }
        if let chunk, start + bytes <= chunkSize {
            used = start + bytes
            allocatedBytes = total
            return chunk + start
        }
        allocatedBytes += bytes
        let next = min(Self.largestChunkSize, max(Self.firstChunkSize, chunkSize * 2))
        guard bytes <= next / 4 else {
            let block = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: max(alignment, 16))
            blocks.append(block)
            return block
        }
        // The rest of the current chunk is left unused: pieces here are at most a quarter of
        // a chunk, so that wastes little.
        let fresh = UnsafeMutableRawPointer.allocate(byteCount: next, alignment: 16)
        if first == nil { first = fresh } else { blocks.append(fresh) }
        chunk = fresh
        chunkSize = next
        used = bytes
        return fresh
    }

    /// Encoding fills memory for values already in hand; it has no budget.
    private func allocate(encoding bytes: Int, alignment: Int) -> UnsafeMutableRawPointer {
        guard let p = allocate(bytes: bytes, alignment: alignment) else {
            preconditionFailure("an encode's arena has no budget to exhaust")
        }
        return p
    }

    /// Memory for protobuf-c's unpack, or nil past the budget. 8-byte alignment serves every
    /// struct protobuf-c builds (nothing in them is wider than 8 bytes).
    func raw(bytes: Int) -> UnsafeMutableRawPointer? {
        pieces += 1
        return allocate(bytes: bytes, alignment: 8)
    }

    func string(_ s: String) -> UnsafeMutablePointer<CChar> {
        var s = s
        return s.withUTF8 { utf8 in
            let p = allocate(encoding: utf8.count + 1, alignment: 1).bindMemory(to: CChar.self, capacity: utf8.count + 1)
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
            let marker = allocate(encoding: 1, alignment: 1)
            deferred.append((marker, b))
            return ProtobufCBinaryData(len: 0, data: marker.assumingMemoryBound(to: UInt8.self))
        }
        let p = allocate(encoding: b.count, alignment: 1).bindMemory(to: UInt8.self, capacity: b.count)
        b.withUnsafeBufferPointer { p.update(from: $0.baseAddress!, count: b.count) }
        return ProtobufCBinaryData(len: b.count, data: p)
    }

    func array<V, T>(_ values: [V], _ convert: (V) -> T) -> UnsafeMutablePointer<T>? {
        guard !values.isEmpty else { return nil }
        arrayDepth += 1
        defer { arrayDepth -= 1 }
        let p = allocate(encoding: MemoryLayout<T>.stride * values.count, alignment: MemoryLayout<T>.alignment)
            .bindMemory(to: T.self, capacity: values.count)
        for (i, v) in values.enumerated() { (p + i).initialize(to: convert(v)) }
        return p
    }

    func message<M: CBridgedMessage>(_ m: M) -> UnsafeMutablePointer<M.CType> {
        let p = allocate(encoding: MemoryLayout<M.CType>.size, alignment: MemoryLayout<M.CType>.alignment)
            .bindMemory(to: M.CType.self, capacity: 1)
        M.cInit(p)
        depth += 1
        defer { depth -= 1 }
        m.fill(p, self)
        return p
    }
}
