import Foundation
import Proto
import Testing

/// Wire → JSON: the exact text the CLI prints.
struct ProtoJSONDecodeTests {
    static var item: Item {
        var item = Item()
        item.key = "k1"
        item.name = "Lamp \"desk\" ☀"
        item.valueInDollars = 42
        item.version = 1
        item.photoKeys = ["p1", "p2"]
        item.primaryPhotoKey = "p1"
        return item
    }

    @Test func prettyOutputShowsEveryFieldInNumberOrder() throws {
        let json = try ProtoJSON.decode(Self.item.serializedBytes(), as: Item.protoName)
        #expect(json == """
            {
              "key": "k1",
              "name": "Lamp \\"desk\\" ☀",
              "serialNumber": "",
              "valueInDollars": "42",
              "createdAtMs": "0",
              "updatedAtMs": "0",
              "version": "1",
              "photoKeys": [
                "p1",
                "p2"
              ],
              "primaryPhotoKey": "p1",
              "locationKey": "",
              "quantity": 0,
              "brand": "",
              "model": "",
              "notes": "",
              "purchaseDate": "",
              "purchasePrice": null,
              "purchasePlace": "",
              "replacementValue": null,
              "replacementSource": "",
              "replacementAsOf": "",
              "warrantyExpires": "",
              "tags": [],
              "categoryKey": "",
              "customFields": [],
              "photos": [],
              "valuation": null
            }
            """)
    }

    @Test func compactOutputWithProtoNamesOmitsDefaults() throws {
        let options = ProtoJSON.JSONOptions(useProtoNames: true, emitDefaults: false, prettyPrinted: false)
        let json = try ProtoJSON.decode(Self.item.serializedBytes(), as: Item.protoName, options: options)
        #expect(json == #"{"key":"k1","name":"Lamp \"desk\" ☀","value_in_dollars":"42","version":"1","photo_keys":["p1","p2"],"primary_photo_key":"p1"}"#)
        #expect(try ProtoJSON.decode([], as: Item.protoName, options: options) == "{}")
    }

    @Test func nestedMessagesAndEnumsAreIndented() throws {
        var response = GetImageResponse()
        var info = ImageInfo()
        info.key = "img"
        info.kind = .thumbnail
        info.width = -1
        response.info = info
        response.data = [0xFF, 0x00, 0x10]
        let json = try ProtoJSON.decode(response.serializedBytes(), as: GetImageResponse.protoName, options: .init(emitDefaults: false))
        #expect(json == """
            {
              "info": {
                "key": "img",
                "kind": "THUMBNAIL",
                "width": -1
              },
              "data": "/wAQ"
            }
            """)
    }

    @Test func emptyRepeatedAndAbsentMessagesShowTheirShape() throws {
        #expect(try ProtoJSON.decode([], as: ListItemsResponse.protoName) == """
            {
              "items": [],
              "nextPageToken": "",
              "totalCount": "0",
              "ranked": false
            }
            """)
        #expect(try ProtoJSON.decode([], as: Empty.protoName) == "{}")
        #expect(try ProtoJSON.decode([], as: Edit.protoName, options: .init(prettyPrinted: false))
            == #"{"cropX":0,"cropY":0,"cropWidth":0,"cropHeight":0,"scale":0.0,"shape":"EDIT_SHAPE_UNSPECIFIED","outputSize":0}"#)
    }

    @Test func unknownEnumNumbersPrintAsNumbers() throws {
        var request = PutImageRequest()
        request.kind = ImageKind(rawValue: 42)
        let json = try ProtoJSON.decode(request.serializedBytes(), as: PutImageRequest.protoName, options: .init(emitDefaults: false, prettyPrinted: false))
        #expect(json == #"{"kind":42}"#)
        #expect(try ProtoJSON.encode(json: json, as: PutImageRequest.protoName) == request.serializedBytes())
    }

    @Test func controlCharactersAndLineSeparatorsAreEscaped() throws {
        var request = CreateItemRequest()
        request.name = "a\u{01}b\u{1F}c\td\re\nf\u{08}\u{0C}\u{2028}\u{2029}\u{7F}/"
        let json = try ProtoJSON.decode(request.serializedBytes(), as: CreateItemRequest.protoName, options: .init(emitDefaults: false, prettyPrinted: false))
        #expect(json == #"{"name":"a\u0001b\u001fc\td\re\nf\b\f\u2028\u2029\#u{7F}/"}"#)
        // And the escaped text parses back to the same string.
        #expect(try CreateItemRequest(serializedBytes: ProtoJSON.encode(json: json, as: CreateItemRequest.protoName)) == request)
    }

    @Test func decodedJSONEncodesBackToTheSameBytes() throws {
        var response = ListItemsResponse()
        response.items = (1...3).map(Item.sample)
        response.totalCount = 3
        let bytes = response.serializedBytes()
        for options in [ProtoJSON.JSONOptions(), .init(useProtoNames: true, emitDefaults: false, prettyPrinted: false)] {
            let json = try ProtoJSON.decode(bytes, as: ListItemsResponse.protoName, options: options)
            #expect(try ProtoJSON.encode(json: json, as: ListItemsResponse.protoName) == bytes)
        }
    }

    @Test func unknownMessageIsAnError() throws {
        let e = try #require(throws: ProtoJSONError.self) { try ProtoJSON.decode([], as: "homepwner.v1.Nope") }
        #expect(e.kind == .unknownMessage)
        #expect(e.message == #"unknown message type "homepwner.v1.Nope""#)
    }

    @Test func encodingAndDecodingALargeMessageRepeatedlyStaysStable() throws {
        // Run under valgrind to see leaks; here it proves every path frees and the results stay equal.
        var response = ListItemsResponse()
        response.items = (1...50).map(Item.sample)
        response.nextPageToken = "next"
        response.totalCount = 50
        let bytes = response.serializedBytes()
        let json = try ProtoJSON.decode(bytes, as: ListItemsResponse.protoName)
        for _ in 0..<200 {
            let encoded = try ProtoJSON.encode(json: json, as: ListItemsResponse.protoName)
            #expect(encoded == bytes)
            #expect(try ProtoJSON.decode(encoded, as: ListItemsResponse.protoName) == json)
            #expect(try ListItemsResponse(serializedBytes: encoded).items.count == 50)
            #expect(throws: ProtoJSONError.self) { try ProtoJSON.decode(Array(encoded.dropLast()), as: ListItemsResponse.protoName) }
        }
    }
}
