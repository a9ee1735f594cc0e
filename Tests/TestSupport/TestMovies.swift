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

    /// The quadrants (from the first frame) under heavy noise, coded losslessly (x264 `-qp 0`,
    /// ultrafast), so the movie is large for its length: about 8 MB a second at 640×480, 25
    /// fps, made in about half a second a second. The noise (±24, changing every frame) averages
    /// out in a thumbnail; a poster's quadrant centres are within it of the scene. By default
    /// its `moov` (index) comes last, as ffmpeg writes an MP4; `extra` `-movflags +faststart`
    /// puts it first.
    public static func noisyQuadrants(width: Int = 640, height: Int = 480, seconds: Double = 6, extra: [String] = []) throws -> [UInt8] {
        let boxes = [
            "x=0:y=0:color=red", "x=iw/2:y=0:color=0x00FF00", "x=0:y=ih/2:color=blue", "x=iw/2:y=ih/2:color=white",
        ].map { "drawbox=\($0):w=iw/2:h=ih/2:t=fill" }.joined(separator: ",")
        return try make([
            "-f", "lavfi", "-i", "color=c=black:s=\(width)x\(height):r=25:d=\(seconds)", "-vf", boxes + ",noise=alls=24:allf=t+u",
            "-c:v", "libx264", "-preset", "ultrafast", "-qp", "0", "-pix_fmt", "yuv420p",
        ] + extra + ["-f", "mp4"])
    }

    /// The top-level boxes of an ISO BMFF movie: each one's type, offset and size.
    public static func topLevelBoxes(_ movie: [UInt8]) throws -> [(type: String, offset: Int, size: Int)] {
        var boxes: [(type: String, offset: Int, size: Int)] = []
        var offset = 0
        while offset + 8 <= movie.count {
            var size = movie[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            let type = String(decoding: movie[offset + 4..<offset + 8], as: UTF8.self)
            if size == 1, offset + 16 <= movie.count { size = movie[offset + 8..<offset + 16].reduce(0) { $0 << 8 | Int($1) } }
            if size == 0 { size = movie.count - offset }
            guard size >= 8, offset + size <= movie.count else { throw Failure(description: "box \(type) at \(offset) of \(size) bytes is outside the movie") }
            boxes.append((type, offset, size))
            offset += size
        }
        return boxes
    }

    /// `movie` (its `moov` last, no offsets to patch) with `count` `free` boxes of `boxBytes`
    /// each inserted before its `moov`: a reader skips a small box by reading through it, so
    /// these are read, not seeked past, before the index is reached.
    public static func withFreeBoxesBeforeIndex(_ movie: [UInt8], count: Int, boxBytes: Int) throws -> [UInt8] {
        guard let moov = try topLevelBoxes(movie).first(where: { $0.type == "moov" }), moov.offset + moov.size == movie.count else {
            throw Failure(description: "no moov box at the end")
        }
        var box = [UInt8](repeating: 0, count: boxBytes)
        withUnsafeBytes(of: UInt32(boxBytes).bigEndian) { box.replaceSubrange(0..<4, with: $0) }
        box.replaceSubrange(4..<8, with: Array("free".utf8))
        var padded = Array(movie[..<moov.offset])
        padded.reserveCapacity(movie.count + count * boxBytes)
        for _ in 0..<count { padded += box }
        return padded + movie[moov.offset...]
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
