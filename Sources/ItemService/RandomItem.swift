/// The seed's `+randomItem`: {Fluffy, Rusty, Shiny} × {Bear, Spork, Mac}, value 0–99,
/// serial digit-letter-digit-letter.
public enum RandomItem {
    static let adjectives = ["Fluffy", "Rusty", "Shiny"]
    static let nouns = ["Bear", "Spork", "Mac"]

    /// A random name, serial number and value.
    public static func make() -> (name: String, serialNumber: String, valueInDollars: Int64) {
        var generator = SystemRandomNumberGenerator()
        return make(using: &generator)
    }

    /// The same, from a given generator (tests).
    public static func make(using generator: inout some RandomNumberGenerator) -> (
        name: String, serialNumber: String, valueInDollars: Int64
    ) {
        let name = adjectives.randomElement(using: &generator)! + " " + nouns.randomElement(using: &generator)!
        let digits = Array("0123456789"), letters = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
        let serial = String([
            digits.randomElement(using: &generator)!, letters.randomElement(using: &generator)!,
            digits.randomElement(using: &generator)!, letters.randomElement(using: &generator)!,
        ])
        return (name, serial, Int64.random(in: 0...99, using: &generator))
    }
}
