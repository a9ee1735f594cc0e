#if canImport(Glibc)
import Glibc
#endif
import ProtoWire

/// The method options of proto/, read from the FileDescriptorSet that `protoc-c
/// --descriptor_set_out` writes (ops/gen-proto): protoc-c's generated C descriptors carry a
/// method's name and types but not its options.
struct MethodOptions {
    /// Paths ("/homepwner.v1.ItemService/GetItem") of every method in the set.
    private(set) var methods: Set<String> = []
    /// Paths of the methods marked `option idempotency_level = NO_SIDE_EFFECTS;`.
    private(set) var readOnly: Set<String> = []
    /// The `option (allow) = …;` values of each method (homepwner/v1/options.proto), in order.
    private(set) var callers: [String: [Int32]] = [:]

    /// The field number of the `allow` extension of MethodOptions (options.proto).
    static let allowField = 50001

    /// Reads the descriptor set at `path`.
    init(contentsOf path: String) throws {
        guard let file = fopen(path, "rb") else { throw GeneratorError(description: "cannot read \(path)") }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = fread(&chunk, 1, chunk.count, file)
            if n == 0 { break }
            bytes += chunk[0..<n]
        }
        try self.init(descriptorSet: bytes[...])
    }

    // Field numbers from google/protobuf/descriptor.proto.
    init(descriptorSet: ArraySlice<UInt8>) throws {
        for (number, file) in try Fields(descriptorSet) where number == 1 {  // FileDescriptorSet.file
            let fields = try Fields(file.bytes)
            let package = fields.string(2)  // FileDescriptorProto.package
            for (number, service) in fields where number == 6 {  // FileDescriptorProto.service
                let serviceFields = try Fields(service.bytes)
                let name = serviceFields.string(1)  // ServiceDescriptorProto.name
                let fullName = package.isEmpty ? name : package + "." + name
                for (number, method) in serviceFields where number == 2 {  // ServiceDescriptorProto.method
                    let methodFields = try Fields(method.bytes)
                    let path = "/\(fullName)/\(methodFields.string(1))"  // MethodDescriptorProto.name
                    methods.insert(path)
                    for (number, options) in methodFields where number == 4 {  // MethodDescriptorProto.options
                        let optionFields = try Fields(options.bytes)
                        // MethodOptions.idempotency_level; NO_SIDE_EFFECTS = 1.
                        if optionFields.contains(where: { $0.number == 34 && $0.value.varint == 1 }) {
                            readOnly.insert(path)
                        }
                        // The repeated `allow` extension: one varint each, or packed.
                        for (number, value) in optionFields where number == Self.allowField {
                            switch value {
                            case .varint(let caller):
                                callers[path, default: []].append(Int32(truncatingIfNeeded: caller))
                            case .bytes(let packed):
                                var i = packed.startIndex
                                while i < packed.endIndex {
                                    guard let caller = Varint.read(packed, at: &i) else {
                                        throw GeneratorError(description: "descriptor set: truncated packed allow option of \(path)")
                                    }
                                    callers[path, default: []].append(Int32(truncatingIfNeeded: caller))
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The top-level fields of one encoded message, in wire order (what a descriptor needs: varints
/// and length-delimited fields; fixed-width ones are skipped).
private struct Fields: Sequence {
    enum Value {
        case varint(UInt64)
        case bytes(ArraySlice<UInt8>)

        var varint: UInt64? { if case .varint(let v) = self { v } else { nil } }
        var bytes: ArraySlice<UInt8> { if case .bytes(let b) = self { b } else { [] } }
    }

    private var fields: [(number: Int, value: Value)] = []

    init(_ bytes: ArraySlice<UInt8>) throws {
        var i = bytes.startIndex
        func varint() throws -> UInt64 {
            guard let value = Varint.read(bytes, at: &i) else {
                throw GeneratorError(description: "descriptor set: truncated varint")
            }
            return value
        }
        while i < bytes.endIndex {
            let key = try varint()
            let number = Int(key >> 3)
            switch key & 7 {
            case 0:
                fields.append((number, .varint(try varint())))
            case 1, 5:
                let width = key & 7 == 1 ? 8 : 4
                guard bytes.endIndex - i >= width else { throw GeneratorError(description: "descriptor set: truncated field \(number)") }
                i += width
            case 2:
                let length = try varint()
                guard length <= UInt64(bytes.endIndex - i) else { throw GeneratorError(description: "descriptor set: truncated field \(number)") }
                fields.append((number, .bytes(bytes[i..<(i + Int(length))])))
                i += Int(length)
            default:
                throw GeneratorError(description: "descriptor set: unexpected wire type \(key & 7) for field \(number)")
            }
        }
    }

    func makeIterator() -> some IteratorProtocol<(number: Int, value: Value)> { fields.makeIterator() }

    /// The first string field of this number; empty when absent.
    func string(_ number: Int) -> String {
        fields.first { $0.number == number }.map { String(decoding: $0.value.bytes, as: UTF8.self) } ?? ""
    }
}
