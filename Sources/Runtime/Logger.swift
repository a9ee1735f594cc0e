/// A value-type logger that formats one line per message and hands it to a ``LogSink``.
///
/// Lines look like
/// `2026-11-29T15:47:29.123Z info item-service: listening events=tcp://127.0.0.1:5561 rpc=tcp://127.0.0.1:5551`:
/// a UTC timestamp with milliseconds, the level, the label, the message, then the metadata
/// sorted by key as `key=value`. Values that are empty or contain whitespace, `"` or `=` are quoted,
/// and newlines are escaped so every message stays on one line.
public struct Logger: Sendable {
    /// Identifies the emitting component, for example `"item-service"`.
    public let label: String
    /// The minimum level emitted; messages below it are dropped without evaluating them.
    public var level: LogLevel
    /// Context metadata added to every line (per-call metadata wins on key conflicts).
    public var metadata: [String: String]
    /// Where formatted lines go.
    public let sink: LogSink
    /// Supplies the timestamp of each line.
    public let clock: any WallClock

    /// Creates a logger.
    ///
    /// - Parameters:
    ///   - label: Identifies the emitting component in every line.
    ///   - level: The minimum level emitted.
    ///   - sink: Where lines are written; standard error by default.
    ///   - clock: The source of timestamps; the system clock by default.
    public init(
        label: String,
        level: LogLevel = .info,
        sink: LogSink = .standardError,
        clock: any WallClock = SystemClock()
    ) {
        self.label = label
        self.level = level
        self.metadata = [:]
        self.sink = sink
        self.clock = clock
    }

    /// Returns a copy of this logger that adds `metadata` to every line.
    ///
    /// - Parameter metadata: Context to add; replaces existing context entries with the same key.
    /// - Returns: The new logger.
    public func with(_ metadata: [String: String]) -> Logger {
        var copy = self
        copy.metadata.merge(metadata) { _, new in new }
        return copy
    }

    /// Emits `message` at `level` if `level` is at least ``level``.
    ///
    /// - Parameters:
    ///   - level: The message's severity.
    ///   - message: The message; only evaluated when it is emitted.
    ///   - metadata: Per-call metadata, merged over the logger's context.
    public func log(level: LogLevel, _ message: @autoclosure () -> String, _ metadata: [String: String] = [:]) {
        guard level >= self.level else { return }
        var merged = self.metadata
        merged.merge(metadata) { _, new in new }
        sink.write(Self.format(
            milliseconds: clock.nowMilliseconds(),
            level: level,
            label: label,
            message: message(),
            metadata: merged
        ))
    }

    /// Emits `message` at ``LogLevel/trace``.
    ///
    /// - Parameters:
    ///   - message: The message; only evaluated when it is emitted.
    ///   - metadata: Per-call metadata.
    public func trace(_ message: @autoclosure () -> String, _ metadata: [String: String] = [:]) {
        log(level: .trace, message(), metadata)
    }

    /// Emits `message` at ``LogLevel/debug``.
    ///
    /// - Parameters:
    ///   - message: The message; only evaluated when it is emitted.
    ///   - metadata: Per-call metadata.
    public func debug(_ message: @autoclosure () -> String, _ metadata: [String: String] = [:]) {
        log(level: .debug, message(), metadata)
    }

    /// Emits `message` at ``LogLevel/info``.
    ///
    /// - Parameters:
    ///   - message: The message; only evaluated when it is emitted.
    ///   - metadata: Per-call metadata.
    public func info(_ message: @autoclosure () -> String, _ metadata: [String: String] = [:]) {
        log(level: .info, message(), metadata)
    }

    /// Emits `message` at ``LogLevel/notice``.
    ///
    /// - Parameters:
    ///   - message: The message; only evaluated when it is emitted.
    ///   - metadata: Per-call metadata.
    public func notice(_ message: @autoclosure () -> String, _ metadata: [String: String] = [:]) {
        log(level: .notice, message(), metadata)
    }

    /// Emits `message` at ``LogLevel/warning``.
    ///
    /// - Parameters:
    ///   - message: The message; only evaluated when it is emitted.
    ///   - metadata: Per-call metadata.
    public func warning(_ message: @autoclosure () -> String, _ metadata: [String: String] = [:]) {
        log(level: .warning, message(), metadata)
    }

    /// Emits `message` at ``LogLevel/error``.
    ///
    /// - Parameters:
    ///   - message: The message; only evaluated when it is emitted.
    ///   - metadata: Per-call metadata.
    public func error(_ message: @autoclosure () -> String, _ metadata: [String: String] = [:]) {
        log(level: .error, message(), metadata)
    }

    /// Emits `message` at ``LogLevel/critical``.
    ///
    /// - Parameters:
    ///   - message: The message; only evaluated when it is emitted.
    ///   - metadata: Per-call metadata.
    public func critical(_ message: @autoclosure () -> String, _ metadata: [String: String] = [:]) {
        log(level: .critical, message(), metadata)
    }

    /// Formats one log line (without a trailing newline).
    static func format(
        milliseconds: Int64,
        level: LogLevel,
        label: String,
        message: String,
        metadata: [String: String]
    ) -> String {
        var line = "\(timestamp(milliseconds: milliseconds)) \(level.rawValue) \(label): \(escapeNewlines(message))"
        for key in metadata.keys.sorted() {
            line += " \(key)=\(quoteIfNeeded(metadata[key]!))"
        }
        return line
    }

    /// Renders `value` bare, or quoted with `\` and `"` escaped when it is empty or contains
    /// whitespace, `"` or `=`.
    static func quoteIfNeeded(_ value: String) -> String {
        let needsQuotes = value.isEmpty || value.contains { $0.isWhitespace || $0 == "\"" || $0 == "=" }
        guard needsQuotes else { return value }
        var quoted = "\""
        for character in value {
            switch character {
            case "\"": quoted += "\\\""
            case "\\": quoted += "\\\\"
            case "\n": quoted += "\\n"
            case "\r": quoted += "\\r"
            case "\t": quoted += "\\t"
            default: quoted.append(character)
            }
        }
        return quoted + "\""
    }

    /// Replaces line breaks with `\n`/`\r` so a message never spans lines.
    private static func escapeNewlines(_ text: String) -> String {
        guard text.contains(where: \.isNewline) else { return text }
        var escaped = ""
        for character in text {
            switch character {
            case "\n": escaped += "\\n"
            case "\r": escaped += "\\r"
            case "\r\n": escaped += "\\r\\n"
            default: escaped.append(character)
            }
        }
        return escaped
    }

    /// Formats milliseconds since the epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ` (UTC).
    static func timestamp(milliseconds: Int64) -> String {
        let (seconds, millis) = floorDivide(milliseconds, 1000)
        let (days, secondOfDay) = floorDivide(seconds, 86_400)
        // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
        let shifted = days + 719_468
        let era = floorDivide(shifted, 146_097).quotient
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2)
            + "T" + pad(secondOfDay / 3600, 2) + ":" + pad(secondOfDay / 60 % 60, 2) + ":" + pad(secondOfDay % 60, 2)
            + "." + pad(millis, 3) + "Z"
    }

    /// Division rounding toward negative infinity, with a non-negative remainder.
    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> (quotient: Int64, remainder: Int64) {
        let remainder = value % divisor
        return remainder < 0 ? (value / divisor - 1, remainder + divisor) : (value / divisor, remainder)
    }

    /// Left-pads a non-negative number with zeros to `width` digits.
    private static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }
}
