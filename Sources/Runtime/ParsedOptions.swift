/// The result of ``OptionParser/parse(_:environment:)``: every option's value and where it came from.
public struct ParsedOptions: Sendable {
    /// Where an option's value came from.
    public enum Source: Sendable, Equatable {
        /// The command line.
        case flag
        /// The option's environment variable.
        case environment
        /// The option's default value (also reported for an option with no value at all).
        case `default`
    }

    /// One resolved value.
    struct Value: Sendable {
        /// The value as text; flags hold `"true"` or `"false"`.
        var text: String
        /// Where it came from.
        var source: Source
        /// The environment variable it came from, when `source` is `.environment`.
        var environmentName: String?
        /// Every value given on the command line, in order (a repeated option's all).
        var occurrences: [String] = []
    }

    /// Resolved values by option name (without dashes).
    let values: [String: Value]
    /// Arguments that are not options, in order.
    public var positionals: [String]

    /// Creates the result.
    init(values: [String: Value], positionals: [String]) {
        self.values = values
        self.positionals = positionals
    }

    /// Every value option `name` was given on the command line, in order; its one value when it
    /// came from the environment or a default; empty when it has none.
    public func all(_ name: String) -> [String] {
        guard let value = values[name] else { return [] }
        return value.source == .flag ? value.occurrences : [value.text]
    }

    /// The value of option `name` (without dashes), or `nil` if it has none.
    public subscript(_ name: String) -> String? {
        values[name]?.text
    }

    /// The value of option `name`.
    ///
    /// - Parameter name: The option's name without dashes.
    /// - Throws: ``OptionError/missingValue(_:)`` when the option has no value.
    public func string(_ name: String) throws(OptionError) -> String {
        guard let value = values[name] else { throw .missingValue("--\(name)") }
        return value.text
    }

    /// The value of option `name` as a decimal integer.
    ///
    /// - Parameter name: The option's name without dashes.
    /// - Throws: ``OptionError/missingValue(_:)`` when unset, ``OptionError/invalidValue(option:value:reason:)``
    ///   naming the option and the bad value when it is not an integer.
    public func int(_ name: String) throws(OptionError) -> Int {
        guard let value = values[name] else { throw .missingValue("--\(name)") }
        guard let number = Int(value.text) else {
            var reason = "expected an integer"
            if let environmentName = value.environmentName {
                reason += " (from environment variable \(environmentName))"
            }
            throw .invalidValue(option: "--\(name)", value: value.text, reason: reason)
        }
        return number
    }

    /// Whether option `name` is on: `true` when its value is `1`, `true`, `yes` or `on` (any case).
    ///
    /// - Parameter name: The option's name without dashes.
    public func bool(_ name: String) -> Bool {
        guard let text = values[name]?.text else { return false }
        return OptionParser.parseBool(text) ?? false
    }

    /// Where the value of option `name` came from; ``Source/default`` when it has no value.
    ///
    /// - Parameter name: The option's name without dashes.
    public func source(of name: String) -> Source {
        values[name]?.source ?? .default
    }
}
