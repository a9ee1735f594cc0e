import Foundation
import Proto
import Testing

/// JSON → wire: what is accepted, and what the CLI says about what is not.
struct ProtoJSONEncodeTests {
    let create = CreateItemRequest.protoName

    func error(_ json: String, as name: String) throws -> ProtoJSONError {
        try #require(throws: ProtoJSONError.self) { try ProtoJSON.encode(json: json, as: name) }
    }

    func decoded<M: ProtoMessage>(_ type: M.Type, _ json: String) throws -> M {
        try M(serializedBytes: try ProtoJSON.encode(json: json, as: M.protoName))
    }

    @Test func unknownFieldNamesTheMessageAndItsFields() throws {
        let e = try error(#"{"nam": "Lamp"}"#, as: create)
        #expect(e.kind == .unknownField)
        #expect(e.path == "nam")
        #expect(e.message == #"unknown field "nam" in homepwner.v1.CreateItemRequest (fields: name, serial_number, value_in_dollars, random, key, location_key, quantity, brand, model, notes, purchase_date, purchase_price, purchase_place, replacement_value, replacement_source, replacement_as_of, warranty_expires, tags, category_key, custom_fields)"#)
        #expect(e.description == e.message)
        #expect(try error(#"{"x": 1}"#, as: Empty.protoName).message == #"unknown field "x" in homepwner.v1.Empty (it has no fields)"#)
    }

    @Test func unknownFieldInANestedMessageNamesItsPath() throws {
        let e = try error(#"{"items": [{}, {"nam": "x"}]}"#, as: ListItemsResponse.protoName)
        #expect(e.message.hasPrefix(#"unknown field "items[1].nam" in homepwner.v1.Item (fields: key, name, "#))
    }

    @Test func badEnumValueListsTheDeclaredValues() throws {
        let e = try error(#"{"kind": "BIG"}"#, as: PutImageRequest.protoName)
        #expect(e.kind == .invalidValue)
        #expect(e.message == #"field "kind": unknown enum value "BIG" for homepwner.v1.ImageKind (one of: IMAGE_KIND_UNSPECIFIED, ORIGINAL, EDITED, THUMBNAIL)"#)
        #expect(try error(#"{"kind": true}"#, as: PutImageRequest.protoName).message.hasPrefix(#"field "kind": expected an enum value name or number"#))
    }

    @Test func badIntegerSaysWhatWasGiven() throws {
        #expect(try error(#"{"value_in_dollars": "abc"}"#, as: create).message == #"field "value_in_dollars": expected an integer, got "abc""#)
        #expect(try error(#"{"valueInDollars": 1.5}"#, as: create).message == #"field "value_in_dollars": expected an integer, got 1.5"#)
        #expect(try error(#"{"valueInDollars": true}"#, as: create).message == #"field "value_in_dollars": expected an integer, got true"#)
        #expect(try error(#"{"valueInDollars": [1]}"#, as: create).message == #"field "value_in_dollars": expected an integer, got an array"#)
        #expect(try error(#"{"valueInDollars": "1 2"}"#, as: create).kind == .invalidValue)
    }

    @Test func outOfRangeIntegersAreRefused() throws {
        let e = try error(#"{"page_size": 2147483648}"#, as: ListItemsRequest.protoName)
        #expect(e.kind == .outOfRange)
        #expect(e.message == #"field "page_size": 2147483648 is out of range for int32 (-2147483648 to 2147483647)"#)
        #expect(try error(#"{"pageSize": -2147483649}"#, as: ListItemsRequest.protoName).kind == .outOfRange)
        #expect(try error(#"{"pageSize": "99999999999"}"#, as: ListItemsRequest.protoName).kind == .outOfRange)
        #expect(try error(#"{"valueInDollars": 9223372036854775808}"#, as: create).kind == .outOfRange)
        #expect(try error(#"{"valueInDollars": "-9223372036854775809"}"#, as: create).kind == .outOfRange)
        #expect(try error(#"{"valueInDollars": 123456789012345678901234567890}"#, as: create).kind == .outOfRange)
        #expect(try error(#"{"requestId": -1}"#, as: RequestHeader.protoName).message == #"field "request_id": -1 is out of range for uint64 (0 to 18446744073709551615)"#)
        #expect(try error(#"{"timeoutMs": 4294967296}"#, as: RequestHeader.protoName).kind == .outOfRange)
    }

    @Test func invalidBase64IsRefused() throws {
        let e = try error(#"{"data": "not base64!"}"#, as: PutImageRequest.protoName)
        #expect(e.kind == .invalidValue)
        #expect(e.message == #"field "data": invalid base64 "not base64!""#)
        #expect(try error(#"{"data": "QUJDR"}"#, as: PutImageRequest.protoName).kind == .invalidValue)
        #expect(try error(#"{"data": "QQ=A"}"#, as: PutImageRequest.protoName).kind == .invalidValue)
        #expect(try error(#"{"data": 5}"#, as: PutImageRequest.protoName).message == #"field "data": expected a base64 string, got 5"#)
    }

    @Test func invalidJSONGivesFoundationsReason() throws {
        let e = try error(#"{"name": }"#, as: create)
        #expect(e.kind == .invalidJSON)
        #expect(e.message.hasPrefix("invalid JSON: "))
        #expect(e.message.count > "invalid JSON: ".count)
        #expect(try error(#"[1, 2]"#, as: create).message == "expected a JSON object for homepwner.v1.CreateItemRequest, got an array")
        #expect(try error(#""Lamp""#, as: create).kind == .invalidJSON)
        #expect(try error("{}", as: "homepwner.v1.Nope").kind == .unknownMessage)
    }

    @Test func wrongJSONTypesAreRefusedWithThePath() throws {
        #expect(try error(#"{"name": 5}"#, as: create).message == #"field "name": expected a string, got 5"#)
        #expect(try error(#"{"random": "yes"}"#, as: create).message == #"field "random": expected true or false, got "yes""#)
        #expect(try error(#"{"random": 1}"#, as: create).message == #"field "random": expected true or false, got 1"#)
        #expect(try error(#"{"photoKeys": "a"}"#, as: Item.protoName).message == #"field "photo_keys": expected an array, got "a""#)
        #expect(try error(#"{"photoKeys": ["a", null]}"#, as: Item.protoName).path == "photo_keys[1]")
        #expect(try error(#"{"job": []}"#, as: CaptureResponse.protoName).message == #"field "job": expected an object for homepwner.v1.CaptureJob, got an array"#)
        #expect(try error(#"{"items": [{"valueInDollars": "x"}]}"#, as: ListItemsResponse.protoName).message == #"field "items[0].value_in_dollars": expected an integer, got "x""#)
        #expect(try error(#"{"name": "a", "name": "b", "serialNumber": "s", "serial_number": "t"}"#, as: create).kind == .unknownField)
    }

    @Test func int64IsAcceptedAsStringAndAsNumber() throws {
        for json in [#"{"valueInDollars": 9223372036854775807}"#, #"{"valueInDollars": "9223372036854775807"}"#] {
            #expect(try decoded(CreateItemRequest.self, json).valueInDollars == .max)
        }
        for json in [#"{"valueInDollars": -9223372036854775808}"#, #"{"valueInDollars": "-9223372036854775808"}"#] {
            #expect(try decoded(CreateItemRequest.self, json).valueInDollars == .min)
        }
        for json in [#"{"requestId": 18446744073709551615}"#, #"{"requestId": "18446744073709551615"}"#] {
            #expect(try decoded(RequestHeader.self, json).requestId == .max)
        }
        #expect(try decoded(CreateItemRequest.self, #"{"valueInDollars": 1e3}"#).valueInDollars == 1000)
        #expect(try decoded(CreateItemRequest.self, #"{"valueInDollars": -0}"#).valueInDollars == 0)
        #expect(try decoded(ListItemsRequest.self, #"{"pageSize": "-5"}"#).pageSize == -5)
    }

    @Test func enumIsAcceptedByNameAndByNumber() throws {
        #expect(try decoded(PutImageRequest.self, #"{"kind": "EDITED"}"#).kind == .edited)
        #expect(try decoded(PutImageRequest.self, #"{"kind": 3}"#).kind == .thumbnail)
        // proto3 enums are open: an undeclared number is kept.
        #expect(try decoded(PutImageRequest.self, #"{"kind": 42}"#).kind.rawValue == 42)
        #expect(try decoded(HealthCheckResponse.self, #"{"status": "SERVING"}"#).status == .serving)
    }

    @Test func protoNameAndCamelNameAreBothAccepted() throws {
        let snake = try ProtoJSON.encode(json: #"{"serial_number": "SN", "value_in_dollars": 5}"#, as: create)
        let camel = try ProtoJSON.encode(json: #"{"serialNumber": "SN", "valueInDollars": 5}"#, as: create)
        #expect(snake == camel)
        let request = try CreateItemRequest(serializedBytes: camel)
        #expect(request.serialNumber == "SN" && request.valueInDollars == 5)
    }

    @Test func nullMeansDefaultAndDefaultsAreNotWritten() throws {
        #expect(try ProtoJSON.encode(json: #"{"name": null, "valueInDollars": null, "random": null}"#, as: create) == [])
        #expect(try ProtoJSON.encode(json: #"{"name": "", "valueInDollars": 0, "random": false}"#, as: create) == [])
        #expect(try ProtoJSON.encode(json: #"{"photoKeys": null}"#, as: Item.protoName) == [])
        #expect(try ProtoJSON.encode(json: #"{"photoKeys": []}"#, as: Item.protoName) == [])
    }

    @Test func bytesAcceptStandardAndURLSafeBase64WithOrWithoutPadding() throws {
        let expected: [UInt8] = [0xFB, 0xFF, 0xBF, 0x00, 0x41]
        for text in ["+/+/AEE=", "+/+/AEE", "-_-_AEE=", "-_-_AEE", "+/+/\\nAEE="] {
            #expect(try decoded(PutImageRequest.self, #"{"data": "\#(text)"}"#).data == expected, "\(text)")
        }
        #expect(try decoded(PutImageRequest.self, #"{"data": ""}"#).data == [])
    }

    @Test func stringsKeepUnicodeAndEscapes() throws {
        let request = try decoded(CreateItemRequest.self, #"{"name": "Fluffy B\u00e4r \ud83e\uddf8 \"q\" \\ \n"}"#)
        #expect(request.name == "Fluffy Bär 🧸 \"q\" \\ \n")
    }

    /// JSONSerialization hands numbers of many digits over as NSDecimalNumber, whose
    /// doubleValue is not the nearest double: 1.5000000000145803 arrived as …808, so a value
    /// `homepwner call` printed did not read back as itself (found by ops/fuzz proto-message).
    @Test(arguments: [1.5000000000145803, 0.1 + 0.2, 123456.78901234567, -2.2250738585072014e-308, 1.7976931348623157e308])
    func aDoubleOfSeventeenDigitsReadsAsThatDouble(_ value: Double) throws {
        #expect(try decoded(Edit.self, #"{"scale": \#(value)}"#).scale == value)
        let printed = try ProtoJSON.decode(try ProtoJSON.encode(json: #"{"scale": \#(value)}"#, as: Edit.protoName), as: Edit.protoName)
        #expect(try decoded(Edit.self, printed).scale == value)
    }

    @Test func doublesAcceptNumbersAndSpecialStrings() throws {
        #expect(try decoded(Edit.self, #"{"scale": 1.25}"#).scale == 1.25)
        #expect(try decoded(Edit.self, #"{"scale": "2.5"}"#).scale == 2.5)
        #expect(try decoded(Edit.self, #"{"scale": "Infinity"}"#).scale == .infinity)
        #expect(try decoded(Edit.self, #"{"scale": "NaN"}"#).scale.isNaN)
        #expect(try error(#"{"scale": "big"}"#, as: Edit.protoName).message == #"field "scale": expected a number, got "big""#)
    }
}
