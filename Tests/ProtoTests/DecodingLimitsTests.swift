import Foundation
import Proto
import Testing
import TestSupport

/// Untrusted bytes: size limits, garbage, truncation and lying length prefixes.
struct DecodingLimitsTests {
    @Test func bytesOverTheLimitAreRefusedAsTooLarge() throws {
        let bytes = Item.sample(1).serializedBytes()
        #expect(bytes.count > 16)
        #expect(throws: ProtoDecodingError.tooLarge(type: Item.protoName, size: bytes.count, limit: 16)) {
            try Item(serializedBytes: bytes, options: DecodingOptions(maxBytes: 16))
        }
        #expect(try Item(serializedBytes: bytes, options: DecodingOptions(maxBytes: bytes.count)) == Item.sample(1))

        let error = try #require(throws: ProtoJSONError.self) {
            try ProtoJSON.decode(bytes, as: Item.protoName, options: .init(limits: DecodingOptions(maxBytes: 16)))
        }
        #expect(error.kind == .tooLarge)
        #expect(error.message == "homepwner.v1.Item is \(bytes.count) bytes, over the limit of 16 bytes")
    }

    @Test func randomGarbageNeverCrashesAndOnlyEverFailsAsMalformed() throws {
        var rng = SplitMix64(seed: 0x5EED_2024)
        let types = ProtoCatalog.messageTypes
        var decoded = 0
        var malformed = 0
        for i in 0..<2_000 {
            let length = Int.random(in: 0...256, using: &rng)
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let type = types[i % types.count]
            do {
                let message = try type.init(serializedBytes: bytes)
                // What protobuf-c accepted also re-encodes and prints.
                _ = try type.init(serializedBytes: message.serializedBytes())
                decoded += 1
            } catch .malformed, .nulInText {
                malformed += 1
            } catch {
                Issue.record("\(type.protoName): unexpected \(error) for \(bytes)")
            }
            do {
                _ = try ProtoJSON.decode(bytes, as: type.protoName)
            } catch where error.kind == .malformed {
            } catch {
                Issue.record("\(type.protoName): unexpected \(error) for \(bytes)")
            }
        }
        #expect(decoded + malformed == 2_000)
        #expect(malformed > 0)
    }

    @Test func truncatedEncodingIsMalformed() throws {
        let bytes = Item.sample(7).serializedBytes()
        // Cuts inside a length-delimited field: the last string, and the first (the key).
        for truncated in [Array(bytes.dropLast(1)), Array(bytes.dropLast(2)), Array(bytes.prefix(3))] {
            #expect(throws: ProtoDecodingError.malformed(type: Item.protoName, size: truncated.count)) {
                try Item(serializedBytes: truncated)
            }
            let error = try #require(throws: ProtoJSONError.self) { try ProtoJSON.decode(truncated, as: Item.protoName) }
            #expect(error.kind == .malformed)
        }
    }

    @Test func lengthPrefixClaimingTwoGigabytesIsMalformedWithoutAllocating() throws {
        // PutImageRequest.data (field 2, length-delimited) claiming 2^31 bytes, followed by one byte.
        let bytes: [UInt8] = [0x12, 0x80, 0x80, 0x80, 0x80, 0x08, 0x41]
        let clock = ContinuousClock()
        let elapsed = try clock.measure {
            #expect(throws: ProtoDecodingError.malformed(type: PutImageRequest.protoName, size: bytes.count)) {
                try PutImageRequest(serializedBytes: bytes)
            }
            let error = try #require(throws: ProtoJSONError.self) { try ProtoJSON.decode(bytes, as: PutImageRequest.protoName) }
            #expect(error.kind == .malformed)
            #expect(error.message == "7 bytes do not parse as homepwner.v1.PutImageRequest")
        }
        // Allocating and zeroing 2 GB would take far longer than this.
        #expect(elapsed < .seconds(5))

        // The same lie in a nested message and in a repeated string.
        #expect(throws: ProtoDecodingError.self) { try CaptureResponse(serializedBytes: [0x0A, 0xFF, 0xFF, 0xFF, 0xFF, 0x07, 0x00]) }
        #expect(throws: ProtoDecodingError.self) { try Item(serializedBytes: [0x42, 0x80, 0x80, 0x80, 0x80, 0x08, 0x41]) }
    }
}
