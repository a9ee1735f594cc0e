import Foundation

/// Movies made at test time by `ffmpeg` (Debian's, installed by ops/setup as a test tool) from
/// its lavfi sources, and hostile variants made from them by patching their boxes.
public enum TestMovies {
    /// Why a movie could not be made.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// The scene every movie shows once it is not black: four quadrants, red at the top left,
    /// green (00FF00) at the top right, blue at the bottom left, white at the bottom right.
    public static let quadrantColours: [(r: UInt8, g: UInt8, b: UInt8)] = [(255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 255)]

    /// A movie of `seconds` at 25 fps, `width` × `height`, black until `blackUntil` s and the
    /// quadrants from then on; `codec` an ffmpeg encoder, `format` its muxer ("mp4", "mov",
    /// "matroska"), `extra` more output options (`-movflags +faststart`); `rotate` (degrees)
    /// remuxes it with `-metadata:s:v rotate=…`, which ffmpeg 5.1 writes as a display matrix
    /// only when it copies the stream (a phone's portrait video).
    public static func quadrants(
        width: Int = 320, height: Int = 240, seconds: Double = 3, blackUntil: Double = 1, codec: String = "libx264",
        format: String = "mp4", extra: [String] = [], rotate: Int? = nil
    ) throws -> [UInt8] {
        let on = "enable='gte(t,\(blackUntil))'"
        let boxes = [
            "x=0:y=0:color=red", "x=iw/2:y=0:color=0x00FF00", "x=0:y=ih/2:color=blue", "x=iw/2:y=ih/2:color=white",
        ].map { "drawbox=\($0):w=iw/2:h=ih/2:t=fill:\(on)" }.joined(separator: ",")
        var arguments = ["-f", "lavfi", "-i", "color=c=black:s=\(width)x\(height):r=25:d=\(seconds)", "-vf", boxes, "-c:v", codec]
        if codec == "libx264" || codec == "libx265" { arguments += ["-pix_fmt", "yuv420p"] }
        if codec == "libx265" { arguments += ["-x265-params", "log-level=error", "-tag:v", "hvc1"] }
        let movie = try make(arguments + extra + ["-f", format])
        guard let rotate else { return movie }
        return try make(["-i", "{input}", "-c", "copy", "-metadata:s:v", "rotate=\(rotate)", "-f", format], input: movie)
    }

    /// What `ffmpeg -v error -y <arguments> out` writes, read back; `input`, when given, is
    /// written to a file whose path replaces the argument `{input}`. The files are removed.
    public static func make(_ arguments: [String], input: [UInt8]? = nil) throws -> [UInt8] {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("movie-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let output = folder.appendingPathComponent("out"), inputFile = folder.appendingPathComponent("in")
        if let input { try Data(input).write(to: inputFile) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        process.arguments = ["-nostdin", "-v", "error", "-y"] + arguments.map { $0 == "{input}" ? inputFile.path : $0 } + [output.path]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let said = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(description: "ffmpeg \(arguments.joined(separator: " ")) failed: \(String(decoding: said, as: UTF8.self))")
        }
        return [UInt8](try Data(contentsOf: output))
    }

    /// `movie` with its first `tkhd` box's matrix set to the 2×2 part (a b / c d, each -1, 0
    /// or 1) no translation (which the poster does not use): the display matrix of a phone's
    /// portrait video, or a mirror.
    public static func withMatrix(_ movie: [UInt8], _ a: Int32, _ b: Int32, _ c: Int32, _ d: Int32) throws -> [UInt8] {
        guard let box = find("tkhd", in: movie) else { throw Failure(description: "no tkhd box") }
        // After the type: version and flags, times, track id, duration, layer, group, volume.
        let matrix = box + (movie[box + 4] == 1 ? 56 : 44)
        var patched = movie
        for (index, value) in [a << 16, b << 16, 0, c << 16, d << 16, 0, 0, 0, 1 << 30].enumerated() {
            withUnsafeBytes(of: value.bigEndian) { patched.replaceSubrange((matrix + 4 * index)..<(matrix + 4 * index + 4), with: $0) }
        }
        return patched
    }

    /// `movie` with its `avc1` or `hvc1` sample entry claiming `width` × `height`.
    public static func withSampleEntrySize(_ movie: [UInt8], width: UInt16, height: UInt16) throws -> [UInt8] {
        // In the stsd box: the brands of the ftyp box may name avc1 too.
        guard let stsd = find("stsd", in: movie),
              let entry = find("avc1", in: Array(movie[stsd...])).map({ $0 + stsd }) ?? find("hvc1", in: Array(movie[stsd...])).map({ $0 + stsd })
        else { throw Failure(description: "no avc1 or hvc1 sample entry") }
        var patched = movie
        let at = entry + 4 + 24  // reserved, data reference index, pre-defined and reserved fields
        patched[at] = UInt8(width >> 8)
        patched[at + 1] = UInt8(width & 0xFF)
        patched[at + 2] = UInt8(height >> 8)
        patched[at + 3] = UInt8(height & 0xFF)
        return patched
    }

    /// The offset of the first occurrence of a box type's four characters.
    public static func find(_ type: String, in data: [UInt8]) -> Int? {
        let needle = Array(type.utf8)
        guard data.count >= needle.count else { return nil }
        return (0...(data.count - needle.count)).first { data[$0..<($0 + needle.count)].elementsEqual(needle) }
    }
}
