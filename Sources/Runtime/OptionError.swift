/// Why ``OptionParser/parse(_:environment:)`` or a ``ParsedOptions`` accessor failed.
///
/// Option names in the payloads are spelled as on the command line, with dashes (`"--rpc"`).
/// ``description`` is a message ready to print; for ``helpRequested(_:)`` it is the help text.
public enum OptionError: Error, Equatable, CustomStringConvertible {
    /// `--help` or `-h` was given; the payload is the help text to print (exit status 0).
    case helpRequested(String)
    /// An option that is not declared; `suggestion` is the closest declared one, if any is close.
    case unknownOption(String, suggestion: String?)
    /// An option that needs a value got none, or a required value is unset.
    case missingValue(String)
    /// A value could not be interpreted.
    case invalidValue(option: String, value: String, reason: String)
    /// A positional argument was given to a command that takes none.
    case unexpectedArgument(String)

    /// A message for the user.
    public var description: String {
        switch self {
        case .helpRequested(let helpText):
            helpText
        case .unknownOption(let option, let suggestion?):
            "unknown option '\(option)'; did you mean '\(suggestion)'? (see --help)"
        case .unknownOption(let option, nil) where !option.hasPrefix("--"):
            "unknown option '\(option)' (see --help; a value that starts with '-' goes after '--')"
        case .unknownOption(let option, nil):
            "unknown option '\(option)' (see --help)"
        case .missingValue(let option):
            "missing value for option '\(option)' (see --help)"
        case .invalidValue(let option, let value, let reason):
            "invalid value '\(value)' for option '\(option)': \(reason)"
        case .unexpectedArgument(let argument):
            "unexpected argument '\(argument)' (see --help)"
        }
    }
}
