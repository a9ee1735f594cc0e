/// Base64 as proto3 JSON uses it for bytes fields: standard alphabet with padding on output;
/// standard or URL-safe alphabet, padded or not, on input.
enum ProtoBase64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// Value of each input byte; 0xFF = not base64. Both "+/" and "-_" are accepted.
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in alphabet.enumerated() { table[Int(c)] = UInt8(i) }
        table[Int(UInt8(ascii: "-"))] = 62
        table[Int(UInt8(ascii: "_"))] = 63
        return table
    }()

    static func encode(_ bytes: some Collection<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var it = bytes.makeIterator()
        while let a = it.next() {
            let b = it.next()
            let c = it.next()
            let n = UInt32(a) << 16 | UInt32(b ?? 0) << 8 | UInt32(c ?? 0)
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(b == nil ? UInt8(ascii: "=") : alphabet[Int(n >> 6 & 63)])
            out.append(c == nil ? UInt8(ascii: "=") : alphabet[Int(n & 63)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The decoded bytes, or nil when the text is not base64. ASCII whitespace is ignored.
    static func decode(_ text: String) -> [UInt8]? {
        var digits: [UInt8] = []
        digits.reserveCapacity(text.utf8.count)
        var padding = 0
        for c in text.utf8 {
            switch c {
            case UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"):
                continue
            case UInt8(ascii: "="):
                padding += 1
            default:
                let v = values[Int(c)]
                // A digit after padding, or a byte outside both alphabets.
                guard v != 0xFF, padding == 0 else { return nil }
                digits.append(v)
            }
        }
        guard digits.count % 4 != 1, padding <= 2 else { return nil }
        if padding > 0 && (digits.count + padding) % 4 != 0 { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(digits.count * 3 / 4)
        var i = 0
        while i + 4 <= digits.count {
            let n = UInt32(digits[i]) << 18 | UInt32(digits[i + 1]) << 12 | UInt32(digits[i + 2]) << 6 | UInt32(digits[i + 3])
            out.append(UInt8(truncatingIfNeeded: n >> 16))
            out.append(UInt8(truncatingIfNeeded: n >> 8))
            out.append(UInt8(truncatingIfNeeded: n))
            i += 4
        }
        switch digits.count - i {
        case 2:
            let n = UInt32(digits[i]) << 18 | UInt32(digits[i + 1]) << 12
            out.append(UInt8(truncatingIfNeeded: n >> 16))
        case 3:
            let n = UInt32(digits[i]) << 18 | UInt32(digits[i + 1]) << 12 | UInt32(digits[i + 2]) << 6
            out.append(UInt8(truncatingIfNeeded: n >> 16))
            out.append(UInt8(truncatingIfNeeded: n >> 8))
        default:
            break
        }
        return out
    }
}
