import Foundation

/// How values are spelled in PDF files: numbers, strings, names and dates (ISO 32000-1 §7.3).
enum PDFSyntax {
    /// A real number with at most three decimals and no exponent ("595.276", "-0.5", "12").
    /// Lengths on a page are points, so a thousandth of one is far below what anyone sees.
    static func number(_ value: Double) -> String {
        precondition(value.isFinite, "PDF numbers must be finite (got \(value))")
        precondition(abs(value) < 1e12, "PDF number \(value) is out of range")
        let thousandths = Int((value * 1000).rounded())
        let magnitude = thousandths.magnitude
        let whole = magnitude / 1000
        var fraction = magnitude % 1000
        var text = thousandths < 0 ? "-\(whole)" : "\(whole)"
        if fraction != 0 {
            var digits = 3
            while fraction % 10 == 0 {
                fraction /= 10
                digits -= 1
            }
            let padded = String(fraction)
            text += "." + String(repeating: "0", count: digits - padded.count) + padded
        }
        return text
    }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)

    /// `bytes` as a hexadecimal string body, without the angle brackets.
    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        var out: [UInt8] = []
        for byte in bytes {
            out.append(hexDigits[Int(byte >> 4)])
            out.append(hexDigits[Int(byte & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `value` as four hex digits.
    static func hex16(_ value: UInt16) -> String {
        hex([UInt8(value >> 8), UInt8(value & 0xFF)])
    }

    /// A text string (title, author) in UTF-16BE with a byte-order mark, as a hex string:
    /// readable by every viewer in any script, with nothing to escape.
    static func textString(_ text: String) -> String {
        var bytes: [UInt8] = [0xFE, 0xFF]
        for unit in text.utf16 {
            bytes.append(UInt8(unit >> 8))
            bytes.append(UInt8(unit & 0xFF))
        }
        return "<" + hex(bytes) + ">"
    }

    /// A name object ("/DejaVuSans"): bytes outside the regular printable range written as #xx.
    static func name(_ text: String) -> String {
        var out = "/"
        for byte in text.utf8 {
            let delimiter = "()<>[]{}/%#".utf8.contains(byte)
            if byte < 0x21 || byte > 0x7E || delimiter {
                out += "#" + hex([byte])
            } else {
                out.append(Character(Unicode.Scalar(byte)))
            }
        }
        return out
    }

    /// A date string in UTC ("(D:20250131093000Z)").
    static func date(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        func two(_ value: Int?) -> String {
            let text = String(value ?? 0)
            return text.count < 2 ? "0" + text : text
        }
        let year = String(parts.year ?? 1970)
        return "(D:\(year)\(two(parts.month))\(two(parts.day))\(two(parts.hour))\(two(parts.minute))\(two(parts.second))Z)"
    }
}
