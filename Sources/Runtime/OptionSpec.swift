/// Declares one command-line option: its flag, environment variable, default and help.
public struct OptionSpec: Sendable {
    /// The option's name without dashes: `"rpc"` is passed as `--rpc`.
    public var name: String
    /// The environment variable that supplies the value when the flag is absent, if any.
    public var env: String?
    /// The value used when neither the flag nor the environment variable is given.
    public var defaultValue: String?
    /// One-line description shown by `--help`.
    public var help: String
    /// Placeholder for the value in `--help`, for example `"ENDPOINT"`.
    public var valueName: String
    /// Whether the option is a boolean switch that takes no value (`--verbose`).
    public var isFlag: Bool

    /// Creates an option declaration.
    ///
    /// - Parameters:
    ///   - name: The name without dashes (`"rpc"` → `--rpc`).
    ///   - env: The environment variable consulted when the flag is absent.
    ///   - defaultValue: The value used when neither flag nor environment variable is set.
    ///   - help: One-line description for `--help`.
    ///   - valueName: Placeholder for the value in `--help`.
    ///   - isFlag: `true` for a boolean switch that takes no value.
    public init(
        name: String,
        env: String? = nil,
        defaultValue: String? = nil,
        help: String,
        valueName: String = "VALUE",
        isFlag: Bool = false
    ) {
        self.name = name
        self.env = env
        self.defaultValue = defaultValue
        self.help = help
        self.valueName = valueName
        self.isFlag = isFlag
    }
}
