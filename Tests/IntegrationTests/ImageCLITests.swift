import Digest
import Foundation
import Harness
import ImageService
import Testing

/// `homepwner image …` and `homepwner cache …` through the real executable against the harness.
@Suite struct ImageCLITests {
    static func temporaryFile(_ bytes: [UInt8], suffix: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("hp-cli-\(UUID().uuidString.prefix(8))\(suffix)").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    static func field(_ name: String, in json: String) -> String? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any] else { return nil }
        return object[name].map { "\($0)" }
    }

    @Test func putStatGetRangeListAndRemoveAPhoto() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start(.imageService)
        let photo = try ImageServiceRPCTests.photo("Landscape_3.jpg")
        let input = try Self.temporaryFile(photo, suffix: ".jpg")
        defer { try? FileManager.default.removeItem(atPath: input) }

        let put = try await CLITests.homepwner(["image", "put", input, "--owner", "item-42", "--json"], harness: harness)
        #expect(put.status == 0, "\(put.stderr)")
        let key = try #require(Self.field("key", in: put.stdout))
        #expect(Self.field("checksum", in: put.stdout) == SHA256.checksum(photo))

        let stat = try await CLITests.homepwner(["image", "stat", key], harness: harness)
        #expect(stat.status == 0 && stat.stdout.contains("image/jpeg") && stat.stdout.contains("orientation 3"))

        let output = input + ".out"
        defer { try? FileManager.default.removeItem(atPath: output) }
        let get = try await CLITests.homepwner(["image", "get", key, "-o", output], harness: harness)
        #expect(get.status == 0, "\(get.stderr)")
        #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: output))) == photo)
        let ranged = try await CLITests.homepwner(["image", "get", key, "-o", output, "--range", "10-19"], harness: harness)
        #expect(ranged.status == 0)
        #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: output))) == Array(photo[10...19]))
        let past = try await CLITests.homepwner(["image", "get", key, "-o", output, "--range", "\(photo.count)-"], harness: harness)
        #expect(past.status == 3 && past.stderr.contains("OUT_OF_RANGE"))
        let badRange = try await CLITests.homepwner(["image", "get", key, "-o", output, "--range", "9-3"], harness: harness)
        #expect(badRange.status == 2)

        let list = try await CLITests.homepwner(["image", "ls", "--owner", "item-42"], harness: harness)
        #expect(list.status == 0 && list.stdout.contains(key) && list.stdout.contains("ORIGINAL"))

        let remove = try await CLITests.homepwner(["image", "rm", key], harness: harness)
        #expect(remove.status == 0)
        let gone = try await CLITests.homepwner(["image", "stat", key], harness: harness)
        #expect(gone.status == 4 && gone.stderr.contains("NOT_FOUND"))
    }

    @Test func largeFileGoesThroughAChunkedUploadWithProgress() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start(.imageService)
        var movie: [UInt8] = [0, 0, 0, 16] + Array("ftypqt  ".utf8) + [0, 0, 0, 0]
        movie += (0..<(20 << 20)).map { UInt8(truncatingIfNeeded: $0 >> 5 &+ $0) }
        let input = try Self.temporaryFile(movie, suffix: ".mov")
        defer { try? FileManager.default.removeItem(atPath: input) }
        let put = try await CLITests.homepwner(["image", "put", input, "--json"], harness: harness)
        #expect(put.status == 0, "\(put.stderr)")
        #expect(put.stderr.contains("100%"))
        #expect(Self.field("content_type", in: put.stdout) == "video/quicktime")
        #expect(Self.field("media_type", in: put.stdout) == "MOVIE")
        #expect(Self.field("checksum", in: put.stdout) == SHA256.checksum(movie))
    }

    @Test func badInputAndCacheCommandsExitWithTheirCodes() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start(.imageService)
        let text = try Self.temporaryFile(Array("just some text".utf8), suffix: ".txt")
        defer { try? FileManager.default.removeItem(atPath: text) }
        let refused = try await CLITests.homepwner(["image", "put", text], harness: harness)
        #expect(refused.status == 3 && refused.stderr.contains("not a JPEG"))
        let missing = try await CLITests.homepwner(["image", "put", "/nonexistent/file.jpg"], harness: harness)
        #expect(missing.status == 2)
        let unknown = try await CLITests.homepwner(["image", "stat", UUID().uuidString.lowercased()], harness: harness)
        #expect(unknown.status == 4)
        // An output file in a folder that does not exist: said, not a crash or a silent nothing.
        let photo = try Self.temporaryFile(try ImageServiceRPCTests.photo("Landscape_2.jpg"), suffix: ".jpg")
        defer { try? FileManager.default.removeItem(atPath: photo) }
        let stored = try await CLITests.homepwner(["image", "put", photo, "--json"], harness: harness)
        let key = try #require(Self.field("key", in: stored.stdout))
        let nowhere = try await CLITests.homepwner(["image", "get", key, "-o", "/nonexistent/dir/out.jpg"], harness: harness)
        #expect(nowhere.status != 0 && nowhere.stderr.contains("/nonexistent/dir/out.jpg"))

        let stats = try await CLITests.homepwner(["cache", "stats", "--json"], harness: harness)
        #expect(stats.status == 0 && Self.field("budget_bytes", in: stats.stdout) != nil)
        let purge = try await CLITests.homepwner(["cache", "purge", "--critical"], harness: harness)
        #expect(purge.status == 0 && purge.stdout.contains("0 entries"))
        let after = try await CLITests.homepwner(["cache", "stats"], harness: harness)
        #expect(after.status == 0 && after.stdout.contains("manual 1"))
    }
}
