import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a report is written: a working copy beside `path` (`<path>.part-XXXXXXXX`, a file or a
/// folder) that takes `path`'s place only once the report is complete, so a report that fails
/// leaves nothing behind. Made before anything is asked of the services, so an output that
/// cannot be written is said at once.
public final class ClaimOutput {
    /// Where the report ends up.
    public let path: String
    /// The format, which says whether `path` is a file or a folder.
    public let format: ClaimFormat
    /// The working copy being written.
    public let workingPath: String
    private var settled = false

    /// Checks that a report of `format` can be written at `path` and makes its working copy.
    ///
    /// - Throws: `ClaimReportError.unwritableOutput` naming the path and the reason: a folder
    ///   where a file goes, an HTML folder that exists and is not empty, a folder that is not
    ///   there or not writable.
    public init(path given: String, format: ClaimFormat) throws(ClaimReportError) {
        var path = given
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        self.path = path
        self.format = format
        workingPath = path + ".part-" + UUID().uuidString.prefix(8).lowercased()
        var isFolder: ObjCBool = false
        let exists = FileManager.default.fileExists(atPath: path, isDirectory: &isFolder)
        func refuse(_ reason: String) -> ClaimReportError {
            ClaimReportError(.unwritableOutput, "cannot write the \(format.rawValue.uppercased()) report to \(given): \(reason)")
        }
        switch format {
        case .pdf, .csv:
            if exists && isFolder.boolValue { throw refuse("it is a folder; give a file name") }
            let descriptor = open(workingPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
            guard descriptor >= 0 else { throw refuse(Self.reason(errno, folderOf: path)) }
            close(descriptor)
        case .html:
            if exists {
                guard isFolder.boolValue else { throw refuse("it exists and is not a folder; give a new or empty folder") }
                let entries = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
                guard entries.isEmpty else {
                    throw refuse("the folder exists and is not empty (\(entries.count) entries); give a new or empty folder")
                }
                guard access(path, W_OK) == 0 else { throw refuse(Self.reason(errno, folderOf: path + "/x")) }
            }
            guard mkdir(workingPath, 0o755) == 0 else { throw refuse(Self.reason(errno, folderOf: path)) }
        }
    }

    deinit { discard() }

    /// Puts the finished report in its place (replacing a file, or an empty folder, there).
    public func commit() throws(ClaimReportError) {
        precondition(!settled, "ClaimOutput.commit after commit or discard")
        // rename(2) replaces a file, or an empty folder, in one step.
        guard rename(workingPath, path) == 0 else {
            let reason = String(cString: strerror(errno))
            discard()
            throw ClaimReportError(.writeFailed, "cannot put the report in place at \(path): \(reason)")
        }
        settled = true
    }

    /// Removes the working copy (a report that failed); safe to call more than once.
    public func discard() {
        guard !settled else { return }
        settled = true
        try? FileManager.default.removeItem(atPath: workingPath)
    }

    /// The system's reason for `code`, with the folder named when it is the folder's fault.
    private static func reason(_ code: Int32, folderOf path: String) -> String {
        let folder = (path as NSString).deletingLastPathComponent
        let shown = folder.isEmpty ? "." : folder
        switch code {
        case ENOENT: return "the folder \(shown) does not exist (\(String(cString: strerror(code))))"
        case EACCES, EPERM: return "the folder \(shown) is not writable (\(String(cString: strerror(code))))"
        case EROFS: return "the folder \(shown) is on a read-only file system"
        default: return String(cString: strerror(code))
        }
    }
}
