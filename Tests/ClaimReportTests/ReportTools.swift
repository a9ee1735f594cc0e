import Foundation
import Runtime

/// The command-line tools the tests check the reports with, and the Debian packages that hold
/// them: a missing tool fails the test naming the package to install, never skips it.
enum Tool {
    /// Which package provides each tool.
    static let packages = [
        "qpdf": "qpdf", "pdfinfo": "poppler-utils", "pdftotext": "poppler-utils", "pdfimages": "poppler-utils",
        "pdftoppm": "poppler-utils", "chromium": "chromium", "python3": "python3",
    ]

    /// What a finished tool run gave.
    struct Output: Sendable {
        var status: Int32
        var stdout: Data
        var stderr: String
        var text: String { String(decoding: stdout, as: UTF8.self) }
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// The tool's path, or a failure naming its Debian package.
    static func executable(_ tool: String) throws -> String {
        let package = packages[tool] ?? tool
        let searchPath = (ProcessInfo.processInfo.environment["PATH"] ?? "") + ":/usr/bin:/bin:/usr/local/bin"
        guard let path = searchPath.split(separator: ":").map({ "\($0)/\(tool)" }).first(where: { FileManager.default.isExecutableFile(atPath: $0) })
        else {
            throw Failure(description: "\(tool) is not installed: install the Debian package \(package) (apt-get install -y \(package), or ops/setup)")
        }
        return path
    }

    /// Runs `tool` on a thread of its own (never blocking the task pool the services use),
    /// stopped after `seconds`; throws when it is missing or exits other than 0 (unless `allowFailure`).
    static func run(_ tool: String, _ arguments: [String], allowFailure: Bool = false, seconds: Int = 120) async throws -> Output {
        let path = try executable(tool)
        let output = try await onThreadOfItsOwn("tool-\(tool)") { () throws -> Output in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: path)
            process.arguments = arguments
            let stdout = Pipe()
            let errorFile = FileManager.default.temporaryDirectory.appendingPathComponent("claimtests-stderr-\(UUID().uuidString)")
            _ = FileManager.default.createFile(atPath: errorFile.path, contents: nil)
            defer { try? FileManager.default.removeItem(at: errorFile) }
            let errorHandle = try FileHandle(forWritingTo: errorFile)
            process.standardOutput = stdout
            process.standardError = errorHandle
            process.standardInput = FileHandle.nullDevice
            try process.run()
            let watchdog = DispatchWorkItem { if process.isRunning { process.terminate() } }
            DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(seconds), execute: watchdog)
            let data = stdout.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            watchdog.cancel()
            try errorHandle.close()
            return Output(status: process.terminationStatus, stdout: data, stderr: (try? String(contentsOf: errorFile, encoding: .utf8)) ?? "")
        }
        if output.status != 0, !allowFailure {
            throw Failure(description: "\(tool) \(arguments.joined(separator: " ")) exited \(output.status): \(output.stderr)\(output.text)")
        }
        return output
    }

    /// `pdftotext` of the whole file.
    static func text(of path: String) async throws -> String {
        try await run("pdftotext", ["-enc", "UTF-8", path, "-"]).text
    }

    /// `pdfinfo`'s "Key: value" lines.
    static func info(of path: String) async throws -> [String: String] {
        var fields: [String: String] = [:]
        for line in try await run("pdfinfo", ["-enc", "UTF-8", path]).text.split(separator: "\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[String(line[..<colon])] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return fields
    }

    /// `qpdf --check`; throws with its report when the file has errors.
    static func checkStructure(of path: String) async throws {
        let output = try await run("qpdf", ["--check", path], allowFailure: true)
        guard output.status == 0, output.text.contains("No syntax or stream encoding errors") else {
            throw Failure(description: "qpdf --check \(path) exited \(output.status): \(output.text)\(output.stderr)")
        }
    }

    /// The rows of `pdfimages -list`, one per image drawn: (page, encoding, width, height, and
    /// the number of the image object drawn, the same for every drawing of one image).
    static func images(in path: String) async throws -> [(page: Int, encoding: String, width: Int, height: Int, object: Int)] {
        let lines = try await run("pdfimages", ["-list", path]).text.split(separator: "\n").dropFirst(2)
        return lines.compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count > 10, let page = Int(fields[0]), let width = Int(fields[3]), let height = Int(fields[4]), let object = Int(fields[10])
            else { return nil }
            return (page, String(fields[8]), width, height, object)
        }
    }

    /// One page rendered by `pdftoppm` in grey at `resolution` dots per inch.
    static func render(_ path: String, page: Int, resolution: Int = 20) async throws -> GrayImage {
        let output = try await run("pdftoppm", ["-r", "\(resolution)", "-gray", "-f", "\(page)", "-l", "\(page)", path])
        return try GrayImage(pgm: [UInt8](output.stdout))
    }

    /// The pixels of a PNG (8-bit RGB or RGBA, as Chromium's screenshots are), decoded by a
    /// small pure-Python reader (zlib inflates; Foundation on Linux has no PNG decoder) and
    /// handed over as a binary PPM.
    static func pixels(ofPNG path: String) async throws -> ColorImage {
        let output = try await run("python3", ["-c", pngToPPM, path])
        return try ColorImage(ppm: [UInt8](output.stdout))
    }

    /// PNG (8-bit RGB/RGBA, not interlaced) to binary PPM on stdout: the five row filters
    /// undone, alpha dropped. Exits naming the file and what it could not read.
    static let pngToPPM = """
        import struct, sys, zlib
        path = sys.argv[1]
        data = open(path, 'rb').read()
        if data[:8] != b'\\x89PNG\\r\\n\\x1a\\n':
            sys.exit(path + ': not a PNG file')
        pos, chunks, header = 8, [], None
        while pos + 8 <= len(data):
            length, kind = struct.unpack('>I4s', data[pos:pos + 8])
            body = data[pos + 8:pos + 8 + length]
            pos += 12 + length
            if kind == b'IHDR':
                header = struct.unpack('>IIBBBBB', body)
            elif kind == b'IDAT':
                chunks.append(body)
            elif kind == b'IEND':
                break
        if header is None:
            sys.exit(path + ': no IHDR chunk')
        width, height, depth, colour, _, _, interlace = header
        if depth != 8 or colour not in (2, 6) or interlace != 0:
            sys.exit('%s: depth %d, colour type %d, interlace %d: only 8-bit RGB or RGBA, not interlaced, is read' % (path, depth, colour, interlace))
        step = 3 if colour == 2 else 4
        stride = width * step
        raw = zlib.decompress(b''.join(chunks))
        if len(raw) != height * (stride + 1):
            sys.exit('%s: %d bytes of pixel data, not %d' % (path, len(raw), height * (stride + 1)))
        previous = bytearray(stride)
        out = bytearray()
        for y in range(height):
            start = y * (stride + 1)
            kind = raw[start]
            line = bytearray(raw[start + 1:start + 1 + stride])
            if kind == 1:
                for i in range(step, stride):
                    line[i] = (line[i] + line[i - step]) & 255
            elif kind == 2:
                line = bytearray((a + b) & 255 for a, b in zip(line, previous))
            elif kind == 3:
                for i in range(stride):
                    left = line[i - step] if i >= step else 0
                    line[i] = (line[i] + ((left + previous[i]) >> 1)) & 255
            elif kind == 4:
                for i in range(stride):
                    a = line[i - step] if i >= step else 0
                    b = previous[i]
                    c = previous[i - step] if i >= step else 0
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
            elif kind != 0:
                sys.exit('%s: row %d has filter %d' % (path, y, kind))
            out += line if step == 3 else b''.join(line[i:i + 3] for i in range(0, stride, 4))
            previous = line
        sys.stdout.buffer.write(b'P6\\n%d %d\\n255\\n' % (width, height) + bytes(out))
        """

    /// Headless Chromium printing `page` (a file URL) to a PDF at `pdf`, and a screenshot at `png`.
    static func chromium(print page: URL, toPDF pdf: String, screenshot png: String, profile: String) async throws {
        let common = [
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--user-data-dir=\(profile)",
            "--allow-file-access-from-files",
        ]
        _ = try await run("chromium", common + ["--no-pdf-header-footer", "--print-to-pdf=\(pdf)", page.absoluteString])
        _ = try await run("chromium", common + ["--screenshot=\(png)", "--window-size=1200,1600", "--hide-scrollbars", page.absoluteString])
    }
}

/// A greyscale picture from a binary PGM (P5, 8-bit), as pdftoppm -gray writes it.
struct GrayImage {
    let width: Int
    let height: Int
    let pixels: [UInt8]

    init(pgm: [UInt8]) throws {
        var fields: [Int] = []
        var index = 2
        guard pgm.starts(with: Array("P5".utf8)) else { throw Tool.Failure(description: "pdftoppm did not write a P5 PGM") }
        while fields.count < 3 {
            while index < pgm.count, [0x20, 0x0A, 0x0D, 0x09].contains(pgm[index]) { index += 1 }
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
        width = fields[0]
        height = fields[1]
        pixels = Array(pgm[index...])
    }

    /// Pixels darker than near-white.
    var inkedPixels: Int { pixels.reduce(0) { $0 + ($1 < 240 ? 1 : 0) } }
}

/// A colour picture from a binary PPM (P6, 8-bit RGB), as `Tool.pixels(ofPNG:)` hands it over.
struct ColorImage {
    let width: Int
    let height: Int
    /// Red, green, blue of each pixel, row by row.
    let pixels: [UInt8]

    init(ppm: [UInt8]) throws {
        guard ppm.starts(with: Array("P6".utf8)) else { throw Tool.Failure(description: "the PNG reader did not write a P6 PPM") }
        var fields: [Int] = []
        var index = 2
        while fields.count < 3 {
            while index < ppm.count, [0x20, 0x0A, 0x0D, 0x09].contains(ppm[index]) { index += 1 }
            var value = 0
            while index < ppm.count, (0x30...0x39).contains(ppm[index]) {
                value = value * 10 + Int(ppm[index] - 0x30)
                index += 1
            }
            fields.append(value)
        }
        index += 1
        guard fields[2] == 255, fields[0] > 0, fields[1] > 0, ppm.count - index == fields[0] * fields[1] * 3 else {
            throw Tool.Failure(description: "unexpected PPM: \(fields), \(ppm.count - index) pixel bytes")
        }
        width = fields[0]
        height = fields[1]
        pixels = Array(ppm[index...])
    }

    /// The share of pixels with ink on them: any channel darker than near-white.
    var inkedFraction: Double {
        var inked = 0
        for index in stride(from: 0, to: pixels.count, by: 3) where min(pixels[index], pixels[index + 1], pixels[index + 2]) < 235 {
            inked += 1
        }
        return Double(inked) / Double(width * height)
    }

    /// The colour of a pixel: its brightest channel less its darkest (0 for white, black and
    /// every grey; text antialiased in grey stays under 24).
    func chroma(x: Int, y: Int) -> Int {
        let index = (y * width + x) * 3
        let (r, g, b) = (pixels[index], pixels[index + 1], pixels[index + 2])
        return Int(max(r, g, b)) - Int(min(r, g, b))
    }

    /// The `cell` × `cell` squares (by column and row) at least half of whose pixels have a
    /// chroma of 24 or more: where a colour photo is drawn. Coloured text (links, warnings)
    /// covers far less of any square than that.
    func colourCells(cell: Int = 16) -> Set<Cell> {
        var cells: Set<Cell> = []
        for row in 0..<(height / cell) {
            for column in 0..<(width / cell) {
                var coloured = 0
                for y in (row * cell)..<(row * cell + cell) {
                    for x in (column * cell)..<(column * cell + cell) where chroma(x: x, y: y) >= 24 { coloured += 1 }
                }
                if coloured * 2 >= cell * cell { cells.insert(Cell(column: column, row: row)) }
            }
        }
        return cells
    }

    /// A square of `colourCells`.
    struct Cell: Hashable {
        let column: Int
        let row: Int
    }
}
