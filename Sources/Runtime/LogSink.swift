#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a ``Logger`` writes its formatted lines.
///
/// A sink receives one complete line per log call, without the trailing newline.
public struct LogSink: Sendable {
    /// Receives one formatted line.
    private let writeLine: @Sendable (String) -> Void

    /// Creates a sink from a closure that receives each formatted line (without a trailing newline).
    ///
    /// - Parameter writeLine: Called once per emitted log message, possibly from several threads at once.
    public init(_ writeLine: @escaping @Sendable (_ line: String) -> Void) {
        self.writeLine = writeLine
    }

    /// Writes one formatted line to the sink.
    ///
    /// - Parameter line: The line, without a trailing newline.
    public func write(_ line: String) {
        writeLine(line)
    }

    /// Writes each line plus a newline to standard error with a single `write(2)` call,
    /// so lines from concurrent tasks and processes never interleave.
    public static let standardError = LogSink { line in
        writeToStandardError(line + "\n")
    }

    /// Drops every line.
    public static let discard = LogSink { _ in }

    /// Appends every line to `box`, for tests.
    ///
    /// - Parameter box: The collector that receives the lines.
    /// - Returns: A sink writing into `box`.
    public static func collecting(_ box: LogCollector) -> LogSink {
        LogSink { line in box.append(line) }
    }
}

/// Writes `text` to file descriptor 2 with one `write(2)` call, retrying only after
/// `EINTR` or a partial write.
private func writeToStandardError(_ text: String) {
    var text = text
    text.withUTF8 { buffer in
        guard let base = buffer.baseAddress else { return }
        var offset = 0
        while offset < buffer.count {
            let written = write(2, base + offset, buffer.count - offset)
            if written > 0 {
                offset += written
            } else if written < 0 && errno == EINTR {
                continue
            } else {
                return
            }
        }
    }
}
