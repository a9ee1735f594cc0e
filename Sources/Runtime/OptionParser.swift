/// Parses `--name value` / `--name=value` flags with environment-variable and default fallbacks.
///
/// Precedence is flag > environment variable > default. An empty environment variable counts as unset.
/// `--help`/`-h` throws ``OptionError/helpRequested(_:)``; `--` ends option parsing; a lone `-` is positional.
/// When an option is repeated, the last occurrence wins (`ParsedOptions.all` has every one).
public struct OptionParser: Sendable {
    /// The command's name, shown in the usage line.
    public let command: String
    /// One-line description of the command.
    public let summary: String
    /// The usage line; derived from ``command`` when `nil`.
    public let usage: String?
    /// The declared options, in help order.
    public let options: [OptionSpec]
    /// Whether non-option arguments are accepted.
    public let allowsPositionals: Bool

    /// Creates a parser.
    ///
    /// - Parameters:
    ///   - command: The command's name.
    ///   - summary: One-line description, shown first in the help text.
    ///   - usage: The usage line; `"<command> [options]"` (plus `[arguments...]`) when `nil`.
    ///   - options: The declared options; names must be unique and must not be `help`.
    ///   - allowsPositionals: Whether non-option arguments are accepted.
    public init(
        command: String,
        summary: String,
        usage: String? = nil,
        options: [OptionSpec],
        allowsPositionals: Bool = false
    ) {
        precondition(Set(options.map(\.name)).count == options.count, "duplicate option names for \(command)")
        precondition(!options.contains { $0.name == "help" }, "--help is built in")
        self.command = command
        self.summary = summary
        self.usage = usage
        self.options = options
        self.allowsPositionals = allowsPositionals
    }

    /// Parses `arguments` (without the executable name) against `environment`.
    ///
    /// - Parameters:
    ///   - arguments: The command-line arguments, typically `CommandLine.arguments.dropFirst()`.
    ///   - environment: The process environment, typically `ProcessInfo.processInfo.environment`.
    /// - Returns: Every option's resolved value and the positional arguments.
    /// - Throws: ``OptionError`` for `--help`, unknown options, missing or invalid values and
    ///   unexpected positionals.
    /// Whether `argument`, which starts with one '-', is a value rather than a mistyped option:
    /// after the dash it holds something no option name does (a CURVE public key in Z85 starts
    /// with '-' once in 85, `-GO#Upe-)Hfv…`). `-x` or `-json` is still an unknown option.
    static func isDashedValue(_ argument: String) -> Bool {
        guard argument.hasPrefix("-"), !argument.hasPrefix("--"), argument.count > 1 else { return false }
        return !argument.dropFirst().allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }
    }

    public func parse(_ arguments: [String], environment: [String: String]) throws(OptionError) -> ParsedOptions {
        var specs: [String: OptionSpec] = [:]
        for spec in options { specs[spec.name] = spec }

        var values: [String: ParsedOptions.Value] = [:]
        var positionals: [String] = []
        var optionsEnded = false
        var index = arguments.startIndex
        while index < arguments.endIndex {
            let argument = arguments[index]
            index += 1
            if optionsEnded || argument == "-" || !argument.hasPrefix("-") || Self.isDashedValue(argument) {
                positionals.append(argument)
                continue
            }
            if argument == "--" {
                optionsEnded = true
                continue
            }
            if argument == "--help" || argument == "-h" {
                throw .helpRequested(helpText)
            }
            guard argument.hasPrefix("--") else {
                throw .unknownOption(argument, suggestion: suggestion(for: String(argument.dropFirst())))
            }
            let body = argument.dropFirst(2)
            let name: String
            let inlineValue: String?
            if let equals = body.firstIndex(of: "=") {
                name = String(body[..<equals])
                inlineValue = String(body[body.index(after: equals)...])
            } else {
                name = String(body)
                inlineValue = nil
            }
            guard let spec = specs[name] else {
                throw .unknownOption("--\(name)", suggestion: suggestion(for: name))
            }
            let text: String
            if spec.isFlag {
                if let inlineValue {
                    guard let flag = Self.parseBool(inlineValue) else {
                        throw .invalidValue(option: "--\(name)", value: inlineValue, reason: "expected true or false")
                    }
                    text = String(flag)
                } else {
                    text = "true"
                }
            } else if let inlineValue {
                text = inlineValue
            } else if index < arguments.endIndex, !arguments[index].hasPrefix("--") {
                text = arguments[index]
                index += 1
            } else {
                throw .missingValue("--\(name)")
            }
            values[name] = .init(text: text, source: .flag, occurrences: (values[name]?.occurrences ?? []) + [text])
        }

        for spec in options where values[spec.name] == nil {
            if let variable = spec.env, let raw = environment[variable], !raw.isEmpty {
                var text = raw
                if spec.isFlag {
                    guard let flag = Self.parseBool(raw) else {
                        throw .invalidValue(
                            option: "--\(spec.name)",
                            value: raw,
                            reason: "expected true or false (from environment variable \(variable))"
                        )
                    }
                    text = String(flag)
                }
                values[spec.name] = .init(text: text, source: .environment, environmentName: variable)
            } else if let defaultValue = spec.defaultValue {
                values[spec.name] = .init(text: defaultValue, source: .default)
            }
        }

        if !allowsPositionals, let first = positionals.first {
            throw .unexpectedArgument(first)
        }
        return ParsedOptions(values: values, positionals: positionals)
    }

    /// The text printed for `--help`: summary, usage, then one line per option with its
    /// environment variable and default.
    public var helpText: String {
        let entries: [(left: String, right: String)] = options.map { spec in
            var left = "--\(spec.name)"
            if !spec.isFlag { left += " \(spec.valueName)" }
            var right = spec.help
            if let env = spec.env { right += " [env \(env)]" }
            if let defaultValue = spec.defaultValue { right += " (default: \(defaultValue))" }
            return (left, right)
        } + [(left: "-h, --help", right: "Show this help and exit.")]
        let width = entries.map(\.left.count).max() ?? 0
        var lines = [
            "OVERVIEW: \(summary)",
            "",
            "USAGE: \(usage ?? command + " [options]" + (allowsPositionals ? " [arguments...]" : ""))",
            "",
            "OPTIONS:",
        ]
        for entry in entries {
            let padding = String(repeating: " ", count: width - entry.left.count + 3)
            lines.append("  " + entry.left + padding + entry.right)
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The declared option closest to `name` by edit distance, as `--name`, if it is close enough
    /// to be a plausible typo.
    func suggestion(for name: String) -> String? {
        Self.closest(to: name, among: options.map(\.name) + ["help"]).map { "--\($0)" }
    }

    /// The candidate closest to `word` by edit distance, if it is close enough to be a plausible
    /// typo (for "did you mean …?" messages of options, commands and subcommands alike).
    public static func closest(to word: String, among candidates: [String]) -> String? {
        var best: (name: String, distance: Int)?
        for candidate in candidates {
            let distance = editDistance(word, candidate)
            if distance < (best?.distance ?? .max) {
                best = (candidate, distance)
            }
        }
        guard let best, best.distance <= max(2, best.name.count / 3), best.distance < best.name.count else {
            return nil
        }
        return best.name
    }

    /// Optimal-string-alignment distance: insertions, deletions, substitutions and adjacent
    /// transpositions each cost 1 (so `rcp` → `rpc` is 1).
    static func editDistance(_ lhs: String, _ rhs: String) -> Int {
        let a = Array(lhs), b = Array(rhs)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previousPrevious = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    current[j] = min(current[j], previousPrevious[j - 2] + 1)
                }
            }
            (previousPrevious, previous, current) = (previous, current, previousPrevious)
        }
        return previous[b.count]
    }

    /// Interprets `1/true/yes/on` and `0/false/no/off` (any case); `nil` otherwise.
    static func parseBool(_ text: String) -> Bool? {
        switch text.lowercased() {
        case "1", "true", "yes", "on": true
        case "0", "false", "no", "off": false
        default: nil
        }
    }
}
