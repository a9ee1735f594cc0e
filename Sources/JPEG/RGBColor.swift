/// An opaque 8-bit sRGB colour: what a PNG's transparent pixels are composited on.
public struct RGBColor: Sendable, Equatable, CustomStringConvertible {
    /// Red, green and blue, 0...255.
    public let red: UInt8, green: UInt8, blue: UInt8

    /// White, the default background.
    public static let white = RGBColor(red: 255, green: 255, blue: 255)

    /// A colour from its channels.
    public init(red: UInt8, green: UInt8, blue: UInt8) {
        self.red = red
        self.green = green
        self.blue = blue
    }

    /// A colour from six hex digits, `RRGGBB` or `#RRGGBB` (either case); nil for anything else.
    public init?(hex: String) {
        let digits = hex.hasPrefix("#") ? hex.dropFirst() : Substring(hex)
        guard digits.count == 6, digits.allSatisfy(\.isHexDigit), let value = UInt32(digits, radix: 16) else { return nil }
        self.init(red: UInt8(value >> 16), green: UInt8((value >> 8) & 0xFF), blue: UInt8(value & 0xFF))
    }

    /// Whether the three channels are equal: a grey PNG composited on it stays grey.
    public var isGray: Bool { red == green && green == blue }

    /// "RRGGBB", lower case, as `init(hex:)` reads it.
    public var description: String {
        [red, green, blue].map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }
}
