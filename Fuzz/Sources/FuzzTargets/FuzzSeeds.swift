import CurveAuth
import Foundation
import JPEG
import Proto
import ZMQ

/// The seed inputs of every target, made with the product's own encoders (a request as
/// RPCClient frames it, a certificate as `homepwner keys` writes it) and cut from the real
/// JPEGs in Tests/Fixtures. `homepwner-fuzz --write-seeds` writes them into Fuzz/corpus.
public enum FuzzSeeds {
    /// One seed: the target it is for, its file name, its bytes.
    public struct Seed: Sendable {
        public let target: String
        public let name: String
        public let bytes: [UInt8]
    }

    /// Every seed; `fixtures` is Tests/Fixtures.
    public static func all(fixtures: URL) throws -> [Seed] {
        var seeds: [Seed] = []
        func add(_ target: FuzzTarget, _ name: String, _ bytes: [UInt8]) {
            seeds.append(Seed(target: target.name, name: "seed-" + name, bytes: bytes))
        }
        for (name, bytes) in rpcRequests() { add(.rpcRequest, name, bytes) }
        for (name, bytes) in messages() { add(.protoMessage, name, bytes) }
        for (name, text) in calls() { add(.callJSON, name, Array(text.utf8)) }
        for (name, bytes) in try jpegs(fixtures) { add(.jpeg, name, bytes) }
        for (name, bytes) in try exifBlocks(fixtures) { add(.exifTIFF, name, bytes) }
        for (name, bytes) in try iccProfiles(fixtures) { add(.iccProfile, name, bytes) }
        for (name, frames) in zapRequests() { add(.zapRequest, name, FuzzInput.joined(frames)) }
        for (name, text) in try allowedKeysFiles() { add(.allowedKeys, name, Array(text.utf8)) }
        for (name, text) in certificates() { add(.keyFile, name, Array(text.utf8)) }
        for (name, pieces) in scrapeRequests() { add(.scrapeHTTP, name, FuzzInput.joined(pieces)) }
        return seeds
    }

    // MARK: Messages

    /// JSON for `message` with every field set, nested messages to depth 3, lists of two.
    static func exampleJSON(_ message: String, depth: Int = 0) -> String {
        guard let fields = ProtoRegistry.fields(of: message), depth < 3 else { return "{}" }
        let members = fields.enumerated().map { index, field -> String in
            let value = exampleValue(field, index: index, depth: depth)
            return "\"\(field.jsonName)\": " + (field.isRepeated ? "[\(value), \(value)]" : value)
        }
        return "{" + members.joined(separator: ", ") + "}"
    }

    private static func exampleValue(_ field: ProtoFieldInfo, index: Int, depth: Int) -> String {
        switch field.type {
        case .int32, .sint32, .sfixed32, .uint32, .fixed32: return "\(index + 3)"
        case .int64, .sint64, .sfixed64, .uint64, .fixed64: return "\"\(1_700_000_000_000 + index)\""
        case .float, .double: return "1.5"
        case .bool: return "true"
        case .string: return "\"\(field.name)-\(index)\""
        case .bytes: return "\"\(Data(field.name == "data" ? TinyJPEG.color : Array("fuzz".utf8)).base64EncodedString())\""
        case .enum:
            let values = field.typeName.flatMap { ProtoRegistry.enumValues(of: $0) } ?? []
            let value = values.first(where: { $0.number != 0 }) ?? values.first
            return "\"\(value?.name ?? "0")\""
        case .message: return exampleJSON(field.typeName ?? "", depth: depth + 1)
        }
    }

    /// The wire bytes of `exampleJSON`; empty when the converter refuses it.
    static func example(_ message: String) -> [UInt8] {
        (try? ProtoJSON.encode(json: exampleJSON(message), as: message)) ?? []
    }

    /// A request as a ROUTER receives it: the routing id, then what RPCClient sends.
    private static func requestFrames(_ header: RequestHeader, _ body: [UInt8], routingID: [UInt8] = [0, 0x6B, 0x8B, 0x45, 0x67]) -> [[UInt8]] {
        [routingID, [], header.serializedBytes(), body]
    }

    private static func header(_ path: String, id: UInt64, idempotencyKey: String = "", metadata: Int = 0) -> RequestHeader {
        var header = RequestHeader()
        header.method = path
        header.requestId = id
        header.timeoutMs = 5000
        header.idempotencyKey = idempotencyKey
        header.metadata = (0..<metadata).map { index in
            var entry = MetadataEntry()
            entry.key = "trace-\(index)"
            entry.value = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
            return entry
        }
        return header
    }

    static func rpcRequests() -> [(String, [UInt8])] {
        var seeds: [(String, [UInt8])] = []
        for (index, method) in ProtoCatalog.methods.enumerated() {
            let key = method.isReadOnly ? "" : "6f9619ff-8b86-d011-b42d-00c04fc964ff"
            let frames = requestFrames(header(method.path, id: UInt64(index + 1), idempotencyKey: key, metadata: index % 3), example(method.requestName))
            seeds.append(("\(method.service.split(separator: ".").last!)-\(method.name)", FuzzInput.joined(frames)))
        }
        let create = ItemServiceRPC.createItem.path
        let body = example(CreateItemRequest.protoName)
        let odd: [(String, [[UInt8]])] = [
            ("empty-request", requestFrames(header(create, id: 7), [])),
            ("no-delimiter", [[0, 1, 2, 3, 4], header(create, id: 7).serializedBytes(), body]),
            ("req-correlate-envelope", [[0, 1, 2, 3, 4], [0, 0, 0, 9], [], header(create, id: 7).serializedBytes(), body]),
            ("routing-id-only", [[0, 1, 2, 3, 4]]),
            ("extra-frame", requestFrames(header(create, id: 7), body) + [[1, 2, 3]]),
            ("header-not-protobuf", [[0, 1, 2, 3, 4], [], Array("GET / HTTP/1.1".utf8), body]),
            ("unknown-method", requestFrames(header("/homepwner.v1.ItemService/Nope", id: 7), body)),
            ("no-method", requestFrames(header("", id: 7), body)),
            ("metadata-over-limit", requestFrames(header(create, id: 7, metadata: 65), body)),
            ("body-of-another-message", requestFrames(header(create, id: 7), example(PutImageRequest.protoName))),
        ]
        return seeds + odd.map { ($0.0, FuzzInput.joined($0.1)) }
    }

    static func messages() -> [(String, [UInt8])] {
        var seeds: [(String, [UInt8])] = []
        for (index, type) in ProtoCatalog.messageTypes.enumerated() {
            let name = type.protoName.split(separator: ".").last!
            seeds.append(("\(name)", [UInt8(index), 0] + example(type.protoName)))
            if Messages.largeBytesField(of: type.protoName) == 2 {
                // A 64 KiB `data` (field 2) spliced in after the fields: the server's photo path.
                seeds.append(("\(name)-large-data", [UInt8(index), 0b1110_0011] + example(type.protoName)))
            }
        }
        return seeds
    }

    static func calls() -> [(String, String)] {
        var seeds = ProtoCatalog.methods.map { method in
            ("\(method.service.split(separator: ".").last!)-\(method.name)", "\(method.service.split(separator: ".").last!)/\(method.name)\n\(exampleJSON(method.requestName))")
        }
        seeds += [
            ("readme-create-item", "ItemService/CreateItem\n{\"name\": \"Rusty Spork\", \"valueInDollars\": 42}"),
            ("readme-health", "Health/Check\n{\"service\": \"homepwner.v1.Health\"}"),
            ("proto-names", "homepwner.v1.ItemService.UpdateItem\n{\"item_key\": \"k\", \"value_in_dollars\": \"-5\", \"serial_number\": null}"),
            ("bare-method-no-json", "ListItems"),
            ("unknown-field", "CreateItem\n{\"name\": \"x\", \"colour\": \"red\"}"),
            ("not-json", "CreateItem\n{\"name\": "),
            ("nested-arrays", "JobQueue/Lease\n{\"queue\": \"thumbnails\", \"max\": [[[[1]]]]}"),
        ]
        return seeds
    }

    // MARK: JPEG

    /// JPEGs of Tests/Fixtures small enough to fuzz (at most the target's -max_len), and the
    /// tiny ones the product's encoder makes, with a real EXIF block.
    static func jpegs(_ fixtures: URL) throws -> [(String, [UInt8])] {
        var seeds: [(String, [UInt8])] = []
        for folder in ["pillow", "exif-orientation"] {
            let directory = fixtures.appendingPathComponent(folder)
            for file in try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() where file.hasSuffix(".jpg") {
                let bytes = [UInt8](try Data(contentsOf: directory.appendingPathComponent(file)))
                if bytes.count <= FuzzTarget.jpeg.maxLength { seeds.append((file, bytes)) }
            }
        }
        let exif = try TinyJPEG.headerSegments(of: fixture(fixtures, "exif-orientation/Landscape_6.jpg")).first { $0.marker == 0xE1 }!
        seeds.append(("tiny-color.jpg", TinyJPEG.color))
        seeds.append(("tiny-gray.jpg", TinyJPEG.gray))
        seeds.append(("tiny-orientation-6.jpg", TinyJPEG.inserting(TinyJPEG.segment(0xE1, exif.payload), into: TinyJPEG.color)))
        return seeds
    }

    /// The TIFF blocks of the EXIF APP1 segments of the fixtures.
    static func exifBlocks(_ fixtures: URL) throws -> [(String, [UInt8])] {
        var seeds: [(String, [UInt8])] = []
        for file in ["exif-orientation/Landscape_1.jpg", "exif-orientation/Landscape_5.jpg", "exif-orientation/Portrait_8.jpg",
                     "pillow/exif_gps.jpg", "pillow/hopper_bad_exif.jpg", "pillow/pil_sample_cmyk.jpg", "pillow/ultrahdr.jpg"] {
            for segment in try TinyJPEG.headerSegments(of: fixture(fixtures, file)) where segment.marker == 0xE1 && segment.payload.starts(with: Array("Exif\0\0".utf8)) {
                seeds.append((file.split(separator: "/").last!.replacingOccurrences(of: ".jpg", with: ".tiff"), Array(segment.payload.dropFirst(6))))
            }
        }
        seeds.append(("made-date-offset-mm.tiff", dateBlockMM))
        return seeds
    }

    /// A Motorola-order (MM) TIFF block whose Exif IFD holds DateTimeOriginal
    /// "2024:05:07 09:33:04" and OffsetTimeOriginal "-05:30", each at its offset: IFD0 at 8
    /// (the Exif IFD pointer), the Exif IFD at 26, the values from 56.
    static let dateBlockMM: [UInt8] = {
        func u16(_ value: Int) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }
        func u32(_ value: Int) -> [UInt8] { u16(value >> 16) + u16(value & 0xFFFF) }
        var block = Array("MM".utf8) + u16(42) + u32(8)
        block += u16(1) + u16(0x8769) + u16(4) + u32(1) + u32(26) + u32(0)
        block += u16(2) + u16(0x9003) + u16(2) + u32(20) + u32(56) + u16(0x9011) + u16(2) + u32(7) + u32(76) + u32(0)
        return block + Array("2024:05:07 09:33:04".utf8) + [0] + Array("-05:30".utf8) + [0, 0]
    }()

    /// ICC profile chunks: the fixtures' own (number, count and part, as the target reads them)
    /// and a profile cut into three, out of order, told grey, with a chunk missing.
    static func iccProfiles(_ fixtures: URL) throws -> [(String, [UInt8])] {
        let identifier = Array("ICC_PROFILE\0".utf8)
        let chunk = try TinyJPEG.headerSegments(of: fixture(fixtures, "pillow/ultrahdr.jpg"))
            .first { $0.marker == 0xE2 && $0.payload.starts(with: identifier) }!.payload.dropFirst(identifier.count)
        let profile = Array(chunk.dropFirst(2))
        let third = profile.count / 3
        let parts = [profile[..<third], profile[third..<2 * third], profile[(2 * third)...]].map(Array.init)
        var grey = profile
        grey.replaceSubrange(16..<20, with: Array("GRAY".utf8))
        // The first byte picks the JPEG: even colour, odd grey.
        return [
            ("color-one-chunk", [0] + FuzzInput.joined([Array(chunk)])),
            ("color-three-chunks", [0] + FuzzInput.joined(parts.enumerated().map { [UInt8($0 + 1), 3] + $1 })),
            ("color-out-of-order", [0] + FuzzInput.joined([[2, 3] + parts[1], [3, 3] + parts[2], [1, 3] + parts[0]])),
            ("color-chunk-missing", [0] + FuzzInput.joined([[1, 3] + parts[0], [3, 3] + parts[2]])),
            ("grey-profile-grey-jpeg", [1] + FuzzInput.joined([[1, 1] + grey])),
            ("color-profile-grey-jpeg", [1] + FuzzInput.joined([Array(chunk)])),
        ]
    }

    private static func fixture(_ fixtures: URL, _ path: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: fixtures.appendingPathComponent(path)))
    }

    // MARK: Keys

    /// The CURVE test vectors of the libzmq documentation (zmq_curve(7)): public, then secret.
    static let server = ("rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7", "JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6")
    static let client = ("Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID", "D:)Q[IlAW!ahhC2ac:9*A}h:p?([4%wOTJ%JR%cs")

    static func zapRequests() -> [(String, [[UInt8]])] {
        func request(_ mechanism: String, _ credentials: [[UInt8]]) -> [[UInt8]] {
            [Array("1.0".utf8), Array("1".utf8), [], Array("127.0.0.1".utf8), [], Array(mechanism.utf8)] + credentials
        }
        func key(_ z85: String) -> [UInt8] { (try? Z85.decode(z85)) ?? [] }
        return [
            ("curve-admin", request("CURVE", [key(server.0)])),
            ("curve-reader", request("CURVE", [key(client.0)])),
            ("curve-unknown", request("CURVE", [key(KeyFileChecks.unlistedKey)])),
            ("curve-short-key", request("CURVE", [Array(key(server.0).prefix(31))])),
            ("null", request("NULL", [])),
            ("plain", request("PLAIN", [Array("admin".utf8), Array("secret".utf8)])),
            ("version-2", [Array("2.0".utf8)] + request("CURVE", [key(server.0)]).dropFirst()),
            ("three-frames", Array(request("CURVE", [key(server.0)]).prefix(3))),
        ]
    }

    static func allowedKeysFiles() throws -> [(String, String)] {
        var keys = AllowedKeys()
        try keys.allow(AllowedKey(role: .admin, publicKey: server.0, name: "admin"))
        try keys.allow(AllowedKey(role: .worker, publicKey: client.0, name: "worker"))
        let written = "# who may call the suite\n" + keys.serialized()
        return [
            ("as-written", written),
            ("crlf", written.replacingOccurrences(of: "\n", with: "\r\n")),
            ("tabs-comments-blank", "\n\t# admins\nadmin\t\(server.0)\tops-laptop # the laptop\n\nreader \(client.0)\n   \n"),
            ("no-final-newline", "reader \(client.0) grafana"),
            ("unknown-role", "writer \(client.0)\n"),
            ("duplicate-key", "admin \(server.0) a\nreader \(server.0) b\n"),
            ("duplicate-name", "admin \(server.0) same\nreader \(client.0) same\n"),
            ("short-key", "admin \(server.0.dropLast())\n"),
            ("name-with-space", "admin \(server.0) two words\n"),
        ]
    }

    static func certificates() -> [(String, String)] {
        let epoch = Date(timeIntervalSince1970: 1_700_000_000)
        let pair = CurveCertificate(publicKey: server.0, secretKey: server.1, metadata: [("name", "server")])
        return [
            ("homepwner-secret", pair.text(includeSecret: true, generated: epoch)),
            ("homepwner-public", pair.text(includeSecret: false, generated: epoch)),
            ("pyzmq-secret", """
                #   ****  Generated on 2023-11-14 22:13:20.000000 by pyzmq  ****
                #   ZeroMQ CURVE **Secret** Certificate
                #   DO NOT PROVIDE THIS FILE TO OTHER USERS nor change its permissions.

                metadata
                curve
                    public-key = "\(client.0)"
                    secret-key = "\(client.1)"

                """),
            ("czmq-public-bare-values", "metadata\n    name = client # who\n    email = ops@example.com\ncurve\n    public-key = \(client.0)\n"),
            ("single-quotes", "curve\n    public-key = '\(client.0)'\n    secret-key = '\(client.1)'\n"),
            ("mismatched-secret", "curve\n    public-key = \"\(server.0)\"\n    secret-key = \"\(client.1)\"\n"),
            ("unterminated-quote", "curve\n    public-key = \"\(server.0)\n"),
            ("no-curve-section", "metadata\n    public-key = \"\(server.0)\"\n"),
        ]
    }

    // MARK: HTTP

    /// The token the scrape-http target guards its second reading with.
    package static let metricsToken = BearerToken("fuzz-metrics-token-0123456789abcdef")!

    static func scrapeRequests() -> [(String, [[UInt8]])] {
        let curl = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:9551\r\nUser-Agent: curl/7.88.1\r\nAccept: */*\r\n\r\n"
        let prometheus = """
            GET /metrics HTTP/1.1\r\nHost: item-service:9551\r\nUser-Agent: Prometheus/2.45.0\r\n\
            Accept: application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1\r\n\
            Accept-Encoding: gzip\r\nX-Prometheus-Scrape-Timeout-Seconds: 10\r\n\r\n
            """
        let bytes = Array(prometheus.utf8)
        let split = bytes.count - 2
        func one(_ text: String) -> [[UInt8]] { [Array(text.utf8)] }
        return [
            ("curl", one(curl)),
            ("prometheus", one(prometheus)),
            ("prometheus-in-pieces", [Array(bytes[..<40]), Array(bytes[40..<split]), Array(bytes[split...])]),
            ("head-index", one("HEAD / HTTP/1.0\r\n\r\n")),
            ("post", one("POST /metrics HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}")),
            ("query", one("GET /metrics?name[]=up HTTP/1.1\r\n\r\n")),
            ("http2-preface", one("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")),
            ("bare-newlines", one("GET /metrics HTTP/1.1\nHost: x\n\n")),
            ("header-without-colon", one("GET /metrics HTTP/1.1\r\nHost x\r\n\r\n")),
            ("head-too-large", one("GET /metrics HTTP/1.1\r\nX-Padding: " + String(repeating: "a", count: 8200) + "\r\n\r\n")),
            ("incomplete", one("GET /metrics HTTP/1.1\r\nHost: x\r\n")),
            ("bearer", one("GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(String(decoding: metricsToken.bytes, as: UTF8.self))\r\n\r\n")),
            ("bearer-lower-case-padded", one("GET / HTTP/1.1\r\nauthorization:  bearer  \(String(decoding: metricsToken.bytes, as: UTF8.self)) \r\n\r\n")),
            ("basic", one("GET /metrics HTTP/1.1\r\nAuthorization: Basic dXNlcjpwYXNz\r\n\r\n")),
        ]
    }
}
