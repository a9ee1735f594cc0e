import Digest
import Foundation
import Harness
import Testing

/// `homepwner image put` of a large file resumes its chunked upload after the client was killed
/// and the service restarted, through the real executable.
@Suite struct UploadResumeCLITests {
    /// A movie-like file (an `ftyp` header, then bytes that do not repeat soon) of `size` bytes.
    static func movie(_ size: Int) throws -> (bytes: [UInt8], path: String) {
        var movie: [UInt8] = [0, 0, 0, 16] + Array("ftypqt  ".utf8) + [0, 0, 0, 0]
        movie += (0..<(size - movie.count)).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 13) }
        return (movie, try ImageCLITests.temporaryFile(movie, suffix: ".mov"))
    }

    /// Runs `image put FILE` and SIGKILLs it once the service has acknowledged at least one
    /// 16 MiB chunk (its staging file has grown past it: the next chunk is sent only after
    /// the answer); fails the test when the put ended first.
    static func killedPut(_ input: String, environment: [String: String], harness: Harness) async throws {
        let put = Process()
        put.executableURL = ExecutableTests.binDirectory.appendingPathComponent("homepwner")
        put.arguments = ["image", "put", input, "--no-progress"]
        put.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            .merging(["HOMEPWNER_IMAGE_RPC": harness.endpoints.imageRPC]) { $1 }
        put.standardOutput = FileHandle.nullDevice
        let errors = FileManager.default.temporaryDirectory.appendingPathComponent("hp-put-\(UUID().uuidString.prefix(8)).err").path
        _ = FileManager.default.createFile(atPath: errors, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: errors) }
        put.standardError = FileHandle(forWritingAtPath: errors)
        try put.run()
        // Watched from a thread of its own: the task pool may be too busy to look in time.
        let staging = harness.dataDirectory + "/images/uploads"
        let pid = put.processIdentifier
        let watcher = Thread {
            let end = Date().addingTimeInterval(60)
            while kill(pid, 0) == 0 && Date() < end {
                if stagedBytes(staging) >= 17 << 20 { break }
                usleep(500)
            }
            // Only a process still there (a pid gone may be another's soon).
            if kill(pid, 0) == 0 { kill(pid, SIGKILL) }
        }
        watcher.start()
        #expect(await ExecutableTests.waitForExit(put, seconds: 70))
        let said = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
        #expect(put.terminationReason == .uncaughtSignal, "the put ended before it was killed (status \(put.terminationStatus)): \(said)")
    }

    /// A fresh `XDG_CACHE_HOME` for the CLI's resume state.
    static func cacheFolder() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("hp-cache-\(UUID().uuidString.prefix(8))").path
    }

    @Test func putKilledMidUploadResumesAfterARestartAndStoresTheWholeFile() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start(.imageService)
        let (movie, input) = try Self.movie(128 << 20)
        defer { try? FileManager.default.removeItem(atPath: input) }
        let cache = Self.cacheFolder()
        defer { try? FileManager.default.removeItem(atPath: cache) }
        let environment = ["XDG_CACHE_HOME": cache]

        try await Self.killedPut(input, environment: environment, harness: harness)
        let states = try FileManager.default.contentsOfDirectory(atPath: cache + "/homepwner/uploads")
        #expect(states.count == 1, "\(states)")
        try harness.restart(.imageService)

        let second = try await CLITests.homepwner(["image", "put", input, "--json"], harness: harness, environment: environment)
        #expect(second.status == 0, "\(second.stderr)")
        let resumed = try #require(
            second.stderr.split(separator: "\n").first { $0.hasPrefix("resuming upload ") }, "\(second.stderr)")
        let words = resumed.split(separator: " ")  // resuming upload <id> at <n> of <total> bytes
        #expect(words.count == 8 && words[5] == "of" && words[6] == "\(movie.count)", "\(resumed)")
        let offset = Int(words.count > 4 ? words[4] : "") ?? 0
        #expect(offset >= 16 << 20 && offset < movie.count, "\(resumed)")
        // The progress bar starts where the upload resumed, not at 0%.
        #expect(!second.stderr.contains("  0%"), "\(second.stderr)")
        #expect(ImageCLITests.field("checksum", in: second.stdout) == SHA256.checksum(movie))
        #expect(ImageCLITests.field("media_type", in: second.stdout) == "MOVIE")
        #expect(try FileManager.default.contentsOfDirectory(atPath: cache + "/homepwner/uploads").isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: harness.dataDirectory + "/images/uploads").isEmpty)
    }

    @Test func aStaleUploadIdOrNoResumeBeginsAnew() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start(.imageService)
        let (movie, input) = try Self.movie(128 << 20)
        defer { try? FileManager.default.removeItem(atPath: input) }
        let cache = Self.cacheFolder()
        defer { try? FileManager.default.removeItem(atPath: cache) }
        let environment = ["XDG_CACHE_HOME": cache]
        let folder = cache + "/homepwner/uploads"

        // The remembered id names an upload the service does not know (as after it expired).
        try await Self.killedPut(input, environment: environment, harness: harness)
        let state = try #require(try FileManager.default.contentsOfDirectory(atPath: folder).first)
        try Data((UUID().uuidString.lowercased() + "\n").utf8).write(to: URL(fileURLWithPath: folder + "/" + state))
        let anew = try await CLITests.homepwner(["image", "put", input, "--json"], harness: harness, environment: environment)
        #expect(anew.status == 0 && !anew.stderr.contains("resuming"), "\(anew.stderr)")
        #expect(ImageCLITests.field("checksum", in: anew.stdout) == SHA256.checksum(movie))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).isEmpty)

        try await Self.killedPut(input, environment: environment, harness: harness)
        let fresh = try await CLITests.homepwner(["image", "put", input, "--no-resume", "--json"], harness: harness, environment: environment)
        #expect(fresh.status == 0 && !fresh.stderr.contains("resuming"), "\(fresh.stderr)")
        #expect(ImageCLITests.field("checksum", in: fresh.stdout) == SHA256.checksum(movie))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).isEmpty)

        let help = try await CLITests.homepwner(["image", "put", "--help"])
        #expect((help.stdout + help.stderr).contains("--no-resume"))
    }

    /// The bytes in the service's staging files.
    static func stagedBytes(_ folder: String) -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.reduce(0) { total, name in
            total + (((try? FileManager.default.attributesOfItem(atPath: "\(folder)/\(name)"))?[.size] as? Int) ?? 0)
        }
    }
}
