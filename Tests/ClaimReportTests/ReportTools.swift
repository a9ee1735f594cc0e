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

    /// The rows of `pdfimages -list`: (page, encoding, width, height).
    static func images(in path: String) async throws -> [(page: Int, encoding: String, width: Int, height: Int)] {
        let lines = try await run("pdfimages", ["-list", path]).text.split(separator: "\n").dropFirst(2)
        return lines.compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count > 9, let page = Int(fields[0]), let width = Int(fields[3]), let height = Int(fields[4]) else { return nil }
            return (page, String(fields[8]), width, height)
        }
    }

    /// One page rendered by `pdftoppm` in grey at `resolution` dots per inch.
    static func render(_ path: String, page: Int, resolution: Int = 20) async throws -> GrayImage {
        let output = try await run("pdftoppm", ["-r", "\(resolution)", "-gray", "-f", "\(page)", "-l", "\(page)", path])
        return try GrayImage(pgm: [UInt8](output.stdout))
    }

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
