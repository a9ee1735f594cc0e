/// The version of every Homepwner executable.
public enum HomepwnerVersion {
    /// The semantic version string, printed by `--version` and logged at start-up.
    public static let string = "0.1.0"
}
