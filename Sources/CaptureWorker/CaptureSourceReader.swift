import Capture
import Foundation
import JPEG
import Proto
import RPC
import Runtime

/// Opens what a capture's source gives: a file of the photo library (never outside it, even
/// through a symlink), the newest photo of its saved-photos folder, or reads what the camera
/// command prints. Every refusal is an `RPCError` whose code says what was wrong.
struct CaptureSourceReader: Sendable {
    let sources: CaptureSources
    /// The largest file read.
    let maxBytes: Int
    /// The threads the camera command is waited for on.
    let threads: BlockingPool
    /// The most a camera command may print: a photo, not a stream.
    static let maxCameraBytes = 64 << 20

    /// A library file by its relative path, open: refused when the path, or a symlink on it,
    /// leads out of the library, or when it is no regular file.
    func libraryFile(_ relative: String) throws(RPCError) -> LibraryFile {
        let root = try libraryRoot()
        if let problem = CaptureSources.problem(withLibraryPath: relative) { throw .invalidArgument(problem) }
        let path = root + "/" + relative
        guard let resolved = CaptureSources.realPath(path) else {
            throw .notFound("no file \(relative) in the photo library (\(root))")
        }
        // The real path, all symlinks followed, must still be inside the library's real path.
        guard resolved != root, CaptureSources.isInside(resolved, root: root) else {
            throw .permissionDenied("\(relative) leads out of the photo library (to \(resolved)) through a symlink; only files inside \(root) are read")
        }
        return try LibraryFile(path: resolved, name: relative, maxBytes: maxBytes)
    }

    /// The newest photo of `<library>/Saved Photos`: by EXIF DateTimeOriginal, else by the
    /// file's modification time (a photo with the tag counts by it; ties go to the later name).
    func recentPhoto() throws(RPCError) -> LibraryFile {
        let root = try libraryRoot()
        let folder = root + "/" + CaptureSources.recentFolder
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else {
            throw .notFound("the photo library has no \"\(CaptureSources.recentFolder)\" folder (\(folder)); the recent source picks the newest photo there")
        }
        var best: (key: String, name: String, path: String)?
        for name in names.sorted() where !name.hasPrefix(".") {
            let path = folder + "/" + name
            guard let resolved = CaptureSources.realPath(path), resolved != root, CaptureSources.isInside(resolved, root: root),
                let attributes = try? FileManager.default.attributesOfItem(atPath: resolved),
                attributes[.type] as? FileAttributeType == .typeRegular,
                let size = attributes[.size] as? Int, size > 0, size <= maxBytes,
                let head = FileHandle(forReadingAtPath: resolved).flatMap({ handle in
                    defer { try? handle.close() }
                    return try? handle.read(upToCount: 128 << 10)
                }).map({ [UInt8]($0) }),
                JPEG.sniff(head)
            else { continue }
            let modified = (attributes[.modificationDate] as? Date) ?? .distantPast
            // EXIF dates and file times compare as text "YYYY:MM:DD HH:MM:SS" (local time, as cameras write it).
            let key = EXIF.dateTimeOriginal(in: head) ?? Self.exifStyle(modified)
            if best == nil || key >= best!.key { best = (key, name, resolved) }
        }
        guard let best else {
            throw .notFound("the photo library's \"\(CaptureSources.recentFolder)\" folder (\(folder)) holds no JPEG photo")
        }
        return try LibraryFile(path: best.path, name: CaptureSources.recentFolder + "/" + best.name, maxBytes: maxBytes)
    }

    private func libraryRoot() throws(RPCError) -> String {
        guard let library = sources.libraryDirectory else {
            throw .failedPrecondition("no photo library is configured on this capture worker; start it with --library DIR (HOMEPWNER_CAPTURE_LIBRARY)")
        }
        guard let root = CaptureSources.realPath(library) else {
            throw .failedPrecondition("the photo library folder \(library) does not exist on this capture worker")
        }
        return root
    }

    /// The camera command's standard output: one JPEG. Killed at the time limit; a failure
    /// (non-zero exit, a signal) or output that is no JPEG is refused with what it printed.
    func camera() async throws(RPCError) -> (bytes: [UInt8], name: String) {
        guard let command = sources.cameraCommand else {
            throw .failedPrecondition("no camera is configured on this capture worker; start it with --camera COMMAND (HOMEPWNER_CAPTURE_CAMERA)")
        }
        let run = try await CameraCommand(
            command: command, timeoutMilliseconds: sources.cameraTimeoutMilliseconds, maxBytes: min(maxBytes, Self.maxCameraBytes)).run(on: threads)
        return (run, "camera")
    }

    /// A date as EXIF writes one, in local time.
    static func exifStyle(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970)
        var parts = tm()
        localtime_r(&seconds, &parts)
        return String(format: "%04d:%02d:%02d %02d:%02d:%02d", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
                      parts.tm_hour, parts.tm_min, parts.tm_sec)
    }
}
