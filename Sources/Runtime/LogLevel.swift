/// The severity of a log message, from the most verbose (`trace`) to the most severe (`critical`).
///
/// Levels are ordered: a ``Logger`` emits a message when its level is greater than or equal to
/// the logger's own ``Logger/level``.
public enum LogLevel: String, CaseIterable, Comparable, Sendable {
    /// Very fine-grained diagnostics, usually only enabled while debugging one component.
    case trace
    /// Diagnostics useful while developing or debugging.
    case debug
    /// Normal operational messages (the default level).
    case info
    /// Normal but significant conditions, such as the start of a shutdown.
    case notice
    /// Something unexpected happened that the process can recover from.
    case warning
    /// An operation failed.
    case error
    /// The process cannot continue as intended.
    case critical

    /// Parses a level name case-insensitively (`"DEBUG"`, `"Info"`, …); `nil` for an unknown name.
    ///
    /// - Parameter string: The level name, for example the value of `HOMEPWNER_LOG_LEVEL`.
    public init?(string: String) {
        self.init(rawValue: string.lowercased())
    }

    /// The position of the level in the severity order.
    private var severity: Int {
        switch self {
        case .trace: 0
        case .debug: 1
        case .info: 2
        case .notice: 3
        case .warning: 4
        case .error: 5
        case .critical: 6
        }
    }

    /// Whether `lhs` is less severe than `rhs`.
    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool {
        lhs.severity < rhs.severity
    }
}
