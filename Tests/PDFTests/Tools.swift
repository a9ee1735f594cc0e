import Foundation
import PDF

/// The command-line tools the tests check the written PDFs with, and the Debian packages that
/// hold them: a missing tool fails the test with the package to install, never skips it.
enum Tool {
    /// Which package provides each tool.
    static let packages = [
        "qpdf": "qpdf", "pdfinfo": "poppler-utils", "pdftotext": "poppler-utils", "pdffonts": "poppler-utils",
        "pdfimages": "poppler-utils", "pdftoppm": "poppler-utils",
    ]

    /// What a finished tool run gave.
    struct Output {
        var status: Int32
        var stdout: Data
        var stderr: String
        /// Standard output as UTF-8 text.
        var text: String { String(decoding: stdout, as: UTF8.self) }
    }

    /// A tool that is not installed, or one that failed.
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Runs `tool` with `arguments` and returns its output; throws when it is not installed or
    /// exits with a status other than 0 (unless `allowFailure`).
    static func run(_ tool: String, _ arguments: [String], allowFailure: Bool = false) throws -> Output {
        let package = packages[tool] ?? tool
        let searchPath = (ProcessInfo.processInfo.environment["PATH"] ?? "") + ":/usr/bin:/bin:/usr/local/bin"
        guard
            let executable = searchPath.split(separator: ":").map({ "\($0)/\(tool)" }).first(where: {
                FileManager.default.isExecutableFile(atPath: $0)
            })
        else {
            throw Failure(description: "\(tool) is not installed: install the Debian package \(package) (apt-get install -y \(package), or ops/setup)")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let stdout = Pipe()
        let stderrFile = FileManager.default.temporaryDirectory.appendingPathComponent("pdftests-stderr-\(UUID().uuidString)")
        _ = FileManager.default.createFile(atPath: stderrFile.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: stderrFile) }
        let stderrHandle = try FileHandle(forWritingTo: stderrFile)
        process.standardOutput = stdout
        process.standardError = stderrHandle
        try process.run()
        let data = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        try stderrHandle.close()
        let output = Output(
            status: process.terminationStatus, stdout: data, stderr: (try? String(contentsOf: stderrFile, encoding: .utf8)) ?? "")
        if output.status != 0, !allowFailure {
            throw Failure(description: "\(tool) \(arguments.joined(separator: " ")) exited \(output.status): \(output.stderr)\(output.text)")
        }
        return output
    }

    /// `pdftotext` of the whole file, layout as the tool sees it.
    static func text(of path: String) throws -> String {
        try run("pdftotext", ["-enc", "UTF-8", path, "-"]).text
    }

    /// `pdfinfo`'s "Key: value" lines as a dictionary.
    static func info(of path: String) throws -> [String: String] {
        var fields: [String: String] = [:]
        for line in try run("pdfinfo", ["-enc", "UTF-8", path]).text.split(separator: "\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[String(line[..<colon])] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return fields
    }

    /// `qpdf --check`'s verdict; throws with qpdf's report when the file has errors.
    static func checkStructure(of path: String) throws {
        let output = try run("qpdf", ["--check", path], allowFailure: true)
        guard output.status == 0, output.text.contains("No syntax or stream encoding errors") else {
            throw Failure(description: "qpdf --check \(path) exited \(output.status): \(output.text)\(output.stderr)")
        }
    }

    /// One page rendered by `pdftoppm` in grey at `resolution` dots per inch.
    static func render(_ path: String, page: Int, resolution: Int = 30) throws -> GrayImage {
        let output = try run("pdftoppm", ["-r", "\(resolution)", "-gray", "-f", "\(page)", "-l", "\(page)", path])
        return try GrayImage(pgm: [UInt8](output.stdout))
    }
}

/// A greyscale picture read from a binary PGM (P5, 8-bit), as pdftoppm -gray writes it.
struct GrayImage {
    let width: Int
    let height: Int
    /// One byte per pixel, row by row: 0 is black, 255 white.
    let pixels: [UInt8]

    init(width: Int, height: Int, pixels: [UInt8]) {
        self.width = width
        self.height = height
        self.pixels = pixels
    }

    init(pgm: [UInt8]) throws {
        // "P5", width, height, maximum value, each after whitespace, then one whitespace byte.
        var fields: [Int] = []
        var index = 2
        guard pgm.starts(with: Array("P5".utf8)) else { throw Tool.Failure(description: "pdftoppm did not write a P5 PGM") }
        while fields.count < 3 {
            while index < pgm.count, pgm[index] == 0x20 || pgm[index] == 0x0A || pgm[index] == 0x0D || pgm[index] == 0x09 { index += 1 }
            var value = 0
            while index < pgm.count, (0x30...0x39).contains(pgm[index]) {
                value = value * 10 + Int(pgm[index] - 0x30)
                index += 1
            }
            fields.append(value)
        }
        index += 1
        guard fields[2] == 255, pgm.count - index == fields[0] * fields[1] else {
            throw Tool.Failure(description: "unexpected PGM: \(fields), \(pgm.count - index) pixel bytes")
        }
        self.init(width: fields[0], height: fields[1], pixels: Array(pgm[index...]))
    }

    /// Pixels darker than near-white.
    var inkedPixels: Int { pixels.reduce(0) { $0 + ($1 < 240 ? 1 : 0) } }

    /// The picture mirrored left to right.
    var mirrored: GrayImage {
        var out = pixels
        for y in 0..<height {
            for x in 0..<width { out[y * width + x] = pixels[y * width + width - 1 - x] }
        }
        return GrayImage(width: width, height: height, pixels: out)
    }

    /// The mean absolute difference per pixel from `other`, of the same size (0…255).
    func meanDifference(from other: GrayImage) -> Double {
        precondition(width == other.width && height == other.height, "\(width)×\(height) vs \(other.width)×\(other.height)")
        let total = zip(pixels, other.pixels).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }
        return Double(total) / Double(pixels.count)
    }
}

/// A folder for one test's files, removed when the test is done.
final class TemporaryFolder {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("PDFTests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    /// The path of `name` in the folder.
    func path(_ name: String) -> String { url.appendingPathComponent(name).path }
}

/// The repository's test photos (Tests/Fixtures), found from this file's path.
enum Fixtures {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures")

    /// The bytes of `name` ("pillow/hopper.jpg").
    static func bytes(_ name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: folder.appendingPathComponent(name)))
    }
}

/// DejaVu Sans, which fonts-dejavu-core installs; the tests of embedded fonts need it.
enum TestFonts {
    static func dejaVu(bold: Bool = false) throws -> PDFFont {
        let path = bold ? "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf" : "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
        guard FileManager.default.fileExists(atPath: path) else {
            throw Tool.Failure(description: "\(path) is missing: install the Debian package fonts-dejavu-core (apt-get install -y fonts-dejavu-core, or ops/setup)")
        }
        return try PDFFont.trueType(path: path)
    }
}
