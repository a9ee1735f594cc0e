import CProtobufC

/// A generated message's link to its protobuf-c struct (Generated/*+CBridge.pb.swift).
protocol CBridgedMessage: ProtoMessage {
    associatedtype CType
    static func cInit(_ m: UnsafeMutablePointer<CType>)
    static func cUnpack(_ count: Int, _ data: UnsafePointer<UInt8>) -> UnsafeMutablePointer<CType>?
    static func cFree(_ m: UnsafeMutablePointer<CType>)
    init(c m: UnsafePointer<CType>)
    func fill(_ m: UnsafeMutablePointer<CType>, _ arena: Arena)
}

/// Conversions between Swift values and protobuf-c structs.
enum CBridge {
    static func encode<M: CBridgedMessage>(_ message: M) -> [UInt8] {
        let arena = Arena()
        let c = arena.message(message)
        let base = UnsafeMutableRawPointer(c).assumingMemoryBound(to: ProtobufCMessage.self)
        let size = protobuf_c_message_get_packed_size(base)
        guard size > 0 else { return [] }
        return [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            count = protobuf_c_message_pack(base, buffer.baseAddress!)
        }
    }

    static func decode<M: CBridgedMessage>(
        _ type: M.Type, _ bytes: [UInt8], options: DecodingOptions
    ) throws(ProtoDecodingError) -> M {
        guard bytes.count <= options.maxBytes else {
            throw .tooLarge(type: M.protoName, size: bytes.count, limit: options.maxBytes)
        }
        let decoded: M? = bytes.withUnsafeBufferPointer { buffer in
            // protobuf-c wants a valid pointer even for zero bytes.
            var empty: UInt8 = 0
            let unpacked: UnsafeMutablePointer<M.CType>? =
                if let base = buffer.baseAddress, buffer.count > 0 {
                    M.cUnpack(buffer.count, base)
                } else {
                    M.cUnpack(0, &empty)
                }
            guard let unpacked else { return nil }
            defer { M.cFree(unpacked) }
            return M(c: unpacked)
        }
        guard let decoded else { throw .malformed(type: M.protoName, size: bytes.count) }
        return decoded
    }

    static func string(_ c: UnsafePointer<CChar>?) -> String {
        guard let c else { return "" }
        return String(cString: c)
    }

    static func bytes(_ c: ProtobufCBinaryData) -> [UInt8] {
        guard c.len > 0, let data = c.data else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: c.len))
    }

    static func array<T, V>(_ c: UnsafeMutablePointer<T>?, _ count: Int, _ convert: (T) -> V) -> [V] {
        guard let c, count > 0 else { return [] }
        return UnsafeBufferPointer(start: c, count: count).map(convert)
    }
}

/// Memory for one encode: every C string, array and struct, freed together.
final class Arena {
    private var blocks: [UnsafeMutableRawPointer] = []

    deinit {
        for block in blocks { block.deallocate() }
    }

    private func allocate(bytes: Int, alignment: Int) -> UnsafeMutableRawPointer {
        let block = UnsafeMutableRawPointer.allocate(byteCount: max(bytes, 1), alignment: alignment)
        blocks.append(block)
        return block
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
        let p = allocate(bytes: b.count, alignment: 1).bindMemory(to: UInt8.self, capacity: b.count)
        b.withUnsafeBufferPointer { p.update(from: $0.baseAddress!, count: b.count) }
        return ProtobufCBinaryData(len: b.count, data: p)
    }

    func array<V, T>(_ values: [V], _ convert: (V) -> T) -> UnsafeMutablePointer<T>? {
        guard !values.isEmpty else { return nil }
        let p = allocate(bytes: MemoryLayout<T>.stride * values.count, alignment: MemoryLayout<T>.alignment)
            .bindMemory(to: T.self, capacity: values.count)
        for (i, v) in values.enumerated() { (p + i).initialize(to: convert(v)) }
        return p
    }

    func message<M: CBridgedMessage>(_ m: M) -> UnsafeMutablePointer<M.CType> {
        let p = allocate(bytes: MemoryLayout<M.CType>.size, alignment: MemoryLayout<M.CType>.alignment)
            .bindMemory(to: M.CType.self, capacity: 1)
        M.cInit(p)
        m.fill(p, self)
        return p
    }
}
