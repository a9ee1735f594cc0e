#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a key file (a certificate or an allowed-keys file) could not be read or written; every
/// case names the file, and the description says what to do.
public enum KeyFileError: Error, CustomStringConvertible, Sendable, Equatable {
    /// A system call on `path` failed with `errno`.
    case io(path: String, operation: String, errno: Int32)
    /// `path` exists and would have been overwritten.
    case exists(path: String)
    /// A secret (a key file, a bearer token) that group or others can access (`mode` is its permission bits).
    case insecureMode(path: String, mode: UInt32)
    /// The file's text is not what it should be; `line` is 1-based, 0 when no line is to blame.
    case malformed(path: String, line: Int, reason: String)
    /// A file others could change (an allowed-keys file writable by group or others, or owned
    /// by another user); `reason` says which and how to fix it.
    case unsafe(path: String, reason: String)

    public var description: String {
        switch self {
        case let .io(path, operation, code) where code == EACCES && operation == "open":
            // The usual cause in a container: the file belongs to the host's user, not the container's.
            return "\(path): open failed: \(errnoText(code)) (errno \(code)); this process runs as uid \(geteuid()): "
                + "give it the file (chown \(geteuid()) \(path), or make the keys with `homepwner keys init DIR --owner \(geteuid())`)"
        case let .io(path, operation, code):
            return "\(path): \(operation) failed: \(errnoText(code)) (errno \(code))"
        case let .exists(path):
            return "\(path) already exists; refusing to overwrite it (move it away first)"
        case let .insecureMode(path, mode):
            return "\(path) has mode \(octal(mode)): group or others can access this secret; "
                + "refusing to use it. Fix it with: chmod 600 \(path)"
        case let .malformed(path, line, reason):
            return line > 0 ? "\(path):\(line): \(reason)" : "\(path): \(reason)"
        case let .unsafe(path, reason):
            return "\(path) \(reason)"
        }
    }
}

/// A mode as `0644`.
func octal(_ mode: UInt32) -> String {
    let digits = String(mode & 0o7777, radix: 8)
    return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
}
