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

    @Test func renditionsAndOwnerDeletesFromTheCommandLine() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start(.imageService)
        // Orientation 6: stored upright on its side (taller than wide); shown turned, wider than tall.
        let photo = try Self.temporaryFile(try ImageServiceRPCTests.photo("Landscape_6.jpg"), suffix: ".jpg")
        defer { try? FileManager.default.removeItem(atPath: photo) }
        let stored = try await CLITests.homepwner(["image", "put", photo, "--owner", "item-7", "--json"], harness: harness)
        let key = try #require(Self.field("key", in: stored.stdout))
        let (storedWidth, storedHeight) = (Int(Self.field("width", in: stored.stdout) ?? "") ?? 0, Int(Self.field("height", in: stored.stdout) ?? "") ?? 0)
        #expect(storedWidth < storedHeight)
        let output = photo + ".rendition.jpg"
        defer { try? FileManager.default.removeItem(atPath: output) }

        let fit = try await CLITests.homepwner(["image", "rendition", key, "--size", "100x100", "-o", output, "--json"], harness: harness)
        #expect(fit.status == 0, "\(fit.stderr)")
        // Upright: the stored height is the width shown, the long edge, so it meets the box.
        let fitHeight = Int(Self.field("height", in: fit.stdout) ?? "") ?? 0
        #expect(Self.field("width", in: fit.stdout) == "100")
        #expect(abs(fitHeight - 100 * storedWidth / storedHeight) <= 1, "\(fit.stdout)")
        #expect(Self.field("served", in: fit.stdout) == "rendered" && Self.field("mode", in: fit.stdout) == "FIT")
        let written = [UInt8](try Data(contentsOf: URL(fileURLWithPath: output)))
        #expect(written.count == Int(Self.field("bytes", in: fit.stdout) ?? "") && Array(written.prefix(3)) == [0xFF, 0xD8, 0xFF])
        let fill = try await CLITests.homepwner(["image", "rendition", key, "--size", "64x32", "--fill", "-o", output], harness: harness)
        #expect(fill.status == 0 && fill.stdout.contains("64×32 JPEG (rendered)"), "\(fill.stdout) \(fill.stderr)")

        let badSize = try await CLITests.homepwner(["image", "rendition", key, "--size", "100", "-o", output], harness: harness)
        #expect(badSize.status == 2 && badSize.stderr.contains("--size 100: expected WxH"))
        let noOutput = try await CLITests.homepwner(["image", "rendition", key, "--size", "10x10"], harness: harness)
        #expect(noOutput.status == 2 && noOutput.stderr.contains("-o FILE is required"))
        let unknown = try await CLITests.homepwner(
            ["image", "rendition", UUID().uuidString.lowercased(), "--size", "10x10", "-o", output], harness: harness)
        #expect(unknown.status == 4 && unknown.stderr.contains("NOT_FOUND"))

        let second = try await CLITests.homepwner(["image", "put", photo, "--owner", "item-7"], harness: harness)
        #expect(second.status == 0)
        let both = try await CLITests.homepwner(["image", "rm", key, "--owner", "item-7"], harness: harness)
        #expect(both.status == 2)
        let owned = try await CLITests.homepwner(["image", "rm", "--owner", "item-7", "--json"], harness: harness)
        #expect(owned.status == 0 && Self.field("deleted_count", in: owned.stdout) == "2", "\(owned.stdout) \(owned.stderr)")
        let again = try await CLITests.homepwner(["image", "rm", "--owner", "item-7"], harness: harness)
        #expect(again.status == 0 && again.stdout.contains("deleted 0 images of item-7"))
        let list = try await CLITests.homepwner(["image", "ls", "--owner", "item-7"], harness: harness)
        #expect(list.status == 0 && list.stdout.contains("no images"))
    }

    @Test func severalFilesAreEachStoredOrNamedAsRefused() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start(.imageService)
        let photos = try ["Landscape_1.jpg", "Portrait_5.jpg", "Landscape_8.jpg"].map { try ImageServiceRPCTests.photo($0) }
        var movie: [UInt8] = [0, 0, 0, 16] + Array("ftypisom".utf8) + [0, 0, 0, 0]
        movie += (0..<(9 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 >> 3) }  // over 8 MiB: a chunked upload
        var files = try photos.map { try Self.temporaryFile($0, suffix: ".jpg") }
        files.append(try Self.temporaryFile(movie, suffix: ".mp4"))
        files.insert(try Self.temporaryFile(Array("not a photo".utf8), suffix: ".txt"), at: 1)
        defer { for file in files { try? FileManager.default.removeItem(atPath: file) } }

        let put = try await CLITests.homepwner(["image", "put"] + files + ["--owner", "box-9", "--json"], harness: harness)
        // The text file is refused (exit 3); every other file is stored.
        #expect(put.status == 3, "\(put.stderr)")
        let entries = try #require(try JSONSerialization.jsonObject(with: Data(put.stdout.utf8)) as? [[String: Any]])
        #expect(entries.map { $0["file"] as? String } == files)
        let images = entries.compactMap { $0["image"] as? [String: Any] }
        #expect(images.count == 4)
        #expect(images.map { $0["checksum"] as? String } == (photos + [movie]).map { SHA256.checksum($0) })
        let refused = try #require(entries[1]["error"] as? [String: Any])
        #expect(refused["status"] as? String == "INVALID_ARGUMENT" && (refused["message"] as? String)?.contains("not a JPEG") == true)
        #expect(put.stderr.contains("100%"))

        let list = try await CLITests.homepwner(["image", "ls", "--owner", "box-9", "--json"], harness: harness)
        let listed = try #require(try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [[String: Any]])
        #expect(Set(listed.compactMap { $0["key"] as? String }) == Set(images.compactMap { $0["key"] as? String }))

        // For people: a table of what was stored, the failure on stderr, a summary.
        let again = try await CLITests.homepwner(["image", "put", files[0], files[1], "--no-progress"], harness: harness)
        #expect(again.status == 3)
        #expect(again.stdout.contains("stored 1 of 2 files") && again.stdout.contains(files[0]))
        #expect(again.stderr.contains("\(files[1]): INVALID_ARGUMENT"))

        // Checked before anything is sent: a folder, a missing file, --key with several files.
        let folder = try await CLITests.homepwner(["image", "put", files[0], FileManager.default.temporaryDirectory.path], harness: harness)
        #expect(folder.status == 2 && folder.stderr.contains("is a folder"))
        let missing = try await CLITests.homepwner(["image", "put", files[0], "/nonexistent.jpg"], harness: harness)
        #expect(missing.status == 2 && missing.stderr.contains("no such file"))
        let keyed = try await CLITests.homepwner(["image", "put", files[0], files[2], "--key", UUID().uuidString], harness: harness)
        #expect(keyed.status == 2 && keyed.stderr.contains("give one FILE with it"))
        let count = try await CLITests.homepwner(["image", "ls", "--owner", "box-9", "--json"], harness: harness)
        #expect((try JSONSerialization.jsonObject(with: Data(count.stdout.utf8)) as? [Any])?.count == 4)
    }
}
