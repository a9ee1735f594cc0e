import Foundation
import Proto
import Testing

/// The generated Swift layer is proven complete by pushing a fully populated instance of every
/// message through it: a field the generator dropped or mistyped changes the JSON.
struct EveryMessageRoundTripTests {
    @Test func catalogAndRegistryListTheSameMessages() {
        let registry = ProtoRegistry.messageNames
        let catalog = ProtoCatalog.messageTypes.map { $0.protoName }
        #expect(registry.count > 50)
        #expect(Set(registry).count == registry.count)
        #expect(Set(catalog) == Set(registry))
        #expect(catalog.count == registry.count)
    }

    @Test func catalogAndRegistryListTheSameEnums() {
        #expect(Set(ProtoCatalog.enumTypes.map { $0.protoName }) == Set(ProtoRegistry.enumNames))
        for type in ProtoCatalog.enumTypes {
            let declared = ProtoRegistry.enumValues(of: type.protoName)?.map(\.name) ?? []
            #expect(Set(type.protoValueNames.values) == Set(declared), "\(type.protoName)")
        }
    }

    @Test(arguments: ProtoRegistry.messageNames)
    func everyFieldSurvivesJSONToGeneratedSwiftAndBack(_ name: String) throws {
        let input = try jsonText(Fixture.object(name))
        let bytes = try ProtoJSON.encode(json: input, as: name)

        let type = try #require(generatedType(name), "no generated Swift type for \(name)")
        let message = try type.init(serializedBytes: bytes)
        let reencoded = message.serializedBytes()

        let compact = ProtoJSON.JSONOptions(emitDefaults: false, prettyPrinted: false)
        let viaJSON = try ProtoJSON.decode(bytes, as: name, options: compact)
        let viaSwift = try ProtoJSON.decode(reencoded, as: name, options: compact)
        #expect(viaSwift == viaJSON)
        // The encoder writes what protobuf-c writes: field order, packing, defaults skipped.
        #expect(reencoded == bytes)
        // Nothing lost, nothing altered: the decoded JSON is the input.
        #expect(try parseJSON(viaSwift) == parseJSON(input))
        // Every field name appears, so a field the generated code dropped fails here.
        let keys = Fixture.keys(try JSONSerialization.jsonObject(with: Data(viaSwift.utf8)))
        #expect(Fixture.expectedKeys(name).subtracting(keys).isEmpty, "missing: \(Fixture.expectedKeys(name).subtracting(keys))")

        // The pretty, all-fields form agrees too.
        #expect(try ProtoJSON.decode(reencoded, as: name) == ProtoJSON.decode(bytes, as: name))
    }

    @Test(arguments: ProtoRegistry.messageNames)
    func everyMessageDecodesFromZeroBytesWithEveryFieldShown(_ name: String) throws {
        let type = try #require(generatedType(name))
        #expect(type.init().serializedBytes() == [])
        #expect(try type.init(serializedBytes: []).serializedBytes() == [])
        let json = try ProtoJSON.decode([], as: name)
        let fields = try #require(ProtoRegistry.fields(of: name))
        for field in fields {
            #expect(json.contains("\"\(field.jsonName)\": "), "\(name).\(field.name)")
        }
        #expect(try ProtoJSON.encode(json: "{}", as: name) == [])
    }
}
