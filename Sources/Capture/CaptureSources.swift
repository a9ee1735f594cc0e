import Foundation
import Runtime

/// Where capture finds photos, read from the same flags and `HOMEPWNER_CAPTURE_*` variables by
/// item-service (which answers ListSources and refuses a Capture from a source that is not
/// configured) and by capture-worker (which reads the files and runs the camera): both must
/// be given the same values, as `homepwner up` and the compose file do.
///
/// `upload` is always there. `library` and `recent` need a library folder: `library` takes a
/// path relative to it, `recent` the newest photo of its `recentFolder`. `camera` needs a
/// command that writes one JPEG to its standard output.
public struct CaptureSources: Sendable, Equatable {
    /// The photo library's root (nil: no library, no recent).
    public var libraryDirectory: String?
    /// A shell command printing one JPEG on stdout (nil: no camera), run with `/bin/sh -c`.
    public var cameraCommand: String?
    /// How long the camera command may run before it is killed.
    public var cameraTimeoutMilliseconds: Int
    /// Whether SaveToAlbum may write into `<library>/<albumFolder>`.
    public var albumWritable: Bool

    /// The library's saved-photos folder, which `recent` picks the newest photo of (the seed's
    /// saved photos album).
    public static let recentFolder = "Saved Photos"
    /// The folder under the library SaveToAlbum writes into (the seed's photo album).
    public static let albumFolder = "Albums"
    /// The camera's default time limit.
    public static let defaultCameraTimeoutMilliseconds = 10_000
    /// The most bytes a Capture carries inline (`data`); a larger photo or a movie is sent with
    /// a chunked upload to the image service first and captured by its `image_key`.
    public static let maxInlineBytes = 8 << 20

    /// Sources as given; by default only `upload`.
    public init(
        libraryDirectory: String? = nil, cameraCommand: String? = nil,
        cameraTimeoutMilliseconds: Int = CaptureSources.defaultCameraTimeoutMilliseconds, albumWritable: Bool = false
    ) {
        self.libraryDirectory = libraryDirectory
        self.cameraCommand = cameraCommand
        self.cameraTimeoutMilliseconds = cameraTimeoutMilliseconds
        self.albumWritable = albumWritable
    }

    /// The flags both processes take.
    public static let options: [OptionSpec] = [
        OptionSpec(name: "library", env: EnvironmentNames.captureLibrary, defaultValue: nil,
                   help: "photo library folder for the library and recent capture sources (recent: its \"\(recentFolder)\" folder)",
                   valueName: "DIR"),
        OptionSpec(name: "camera", env: EnvironmentNames.captureCamera, defaultValue: nil,
                   help: "command that writes one JPEG to stdout, run with /bin/sh -c (e.g. \"fswebcam -q -\"); none: no camera",
                   valueName: "COMMAND"),
        OptionSpec(name: "camera-timeout-ms", env: EnvironmentNames.captureCameraTimeout,
                   defaultValue: String(defaultCameraTimeoutMilliseconds), help: "how long the camera command may run", valueName: "MS"),
        OptionSpec(name: "album-writable", env: EnvironmentNames.captureAlbumWritable, defaultValue: "false",
                   help: "let SaveToAlbum write into the library's \"\(albumFolder)\" folder (true/false)", valueName: "BOOL"),
    ]

    /// Reads the parsed flags; an empty value means not configured.
    public init(_ options: ParsedOptions) throws {
        let timeout = try options.int("camera-timeout-ms")
        guard (100...600_000).contains(timeout) else {
            throw OptionError.invalidValue(option: "--camera-timeout-ms", value: String(timeout), reason: "must be 100…600000")
        }
        let writable = try options.string("album-writable").lowercased()
        guard ["true", "false", "1", "0", "yes", "no"].contains(writable) else {
            throw OptionError.invalidValue(option: "--album-writable", value: writable, reason: "must be true or false")
        }
        self.init(
            libraryDirectory: options["library"].flatMap { $0.isEmpty ? nil : $0 },
            cameraCommand: options["camera"].flatMap { $0.isEmpty ? nil : $0 },
            cameraTimeoutMilliseconds: timeout, albumWritable: ["true", "1", "yes"].contains(writable))
    }
}

extension CaptureSources {
    /// `realpath(3)`: every symlink followed; nil when the file does not exist.
    public static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Whether `resolved` (a `realPath`) is `root` (another) or inside it: what a library path,
    /// symlinks followed, must be.
    public static func isInside(_ resolved: String, root: String) -> Bool {
        resolved == root || resolved.hasPrefix(root + "/")
    }

    /// Why `path` cannot name a file in the library, or nil when it can as far as its text
    /// goes: it must be relative, with no `..` component, no empty one, and no NUL. Symlinks
    /// that lead out of the library are the worker's to refuse, when it opens the file.
    public static func problem(withLibraryPath path: String) -> String? {
        if path.isEmpty { return "source_path must name a file in the library (got an empty string)" }
        if path.utf8.contains(0) { return "source_path must not contain a NUL byte" }
        if path.hasPrefix("/") { return "source_path must be relative to the library folder (got the absolute path \"\(path)\")" }
        if path.utf8.count > 4096 { return "source_path must be at most 4096 bytes (got \(path.utf8.count))" }
        let components = path.split(separator: "/", omittingEmptySubsequences: false)
        if components.contains("..") { return "source_path must not leave the library folder with .. (got \"\(path)\")" }
        if components.contains(where: \.isEmpty) { return "source_path must not have an empty component (got \"\(path)\")" }
        return nil
    }
}
