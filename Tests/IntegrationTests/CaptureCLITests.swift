import Capture
import Foundation
import Harness
import Proto
import RPC
import Runtime
import Testing
import TestSupport

/// `homepwner capture …` through the real executable against the suite in the harness, with a
/// photo library in a temporary folder.
@Suite struct CaptureCLITests {
    @Test func captureWaitsForItsJobAndItsExitCodeSaysHowItEnded() async throws {
        let library = FileManager.default.temporaryDirectory.appendingPathComponent("hp-capture-cli-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: library, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: library) }
        let photo = library + "/lamp.jpg"
        try Data(try Fixtures.orientationPhoto("Landscape_1.jpg")).write(to: URL(fileURLWithPath: photo))
        let harness = try Harness(captureSources: CaptureSources(libraryDirectory: library))
        defer { harness.shutdown() }
        try harness.start()
        let items = try harness.client(.itemService)
        defer { items.close() }
        var create = CreateItemRequest()
        create.name = "Lamp"
        let item = try await items.call(ItemServiceRPC.createItem, create, options: .init(timeoutMilliseconds: 30_000)).key

        let done = try await CLITests.homepwner(
            ["capture", item, "--file", photo, "--crop", "0,0,600,400", "--square", "--primary", "--wait", "--json"], harness: harness)
        #expect(done.status == 0, "\(done.stderr)")
        let job = try #require(QueueCLITests.object(done.stdout), "\(done.stdout)")
        #expect(job["state"] as? String == "DONE" && job["item_key"] as? String == item)
        let edited = try #require(job["edited_key"] as? String)
        var get = GetItemRequest()
        get.key = item
        #expect(try await items.call(ItemServiceRPC.getItem, get).primaryPhotoKey == edited)

        let status = try await CLITests.homepwner(["capture", "status", job["job_id"] as? String ?? ""], harness: harness)
        #expect(status.status == 0 && status.stdout.contains("DONE") && status.stdout.contains(edited), "\(status.stdout)")

        let again = try await CLITests.homepwner(["capture", item, "--library", "lamp.jpg", "--wait"], harness: harness)
        #expect(again.status == 0 && again.stdout.contains("duplicate"), "\(again.stdout)")

        let missing = try await CLITests.homepwner(["capture", item, "--library", "nope.jpg", "--wait"], harness: harness)
        #expect(missing.status == 4 && missing.stdout.contains("FAILED") && missing.stdout.contains("no file nope.jpg"), "\(missing.stdout)")
        let outside = try await CLITests.homepwner(["capture", item, "--file", photo, "--crop", "1700,0,200,100", "--wait"], harness: harness)
        #expect(outside.status == 3 && outside.stdout.contains("outside"), "\(outside.stdout)")
        let camera = try await CLITests.homepwner(["capture", item, "--camera"], harness: harness)
        #expect(camera.status == 3 && camera.stderr.contains("no camera is configured"), "\(camera.stderr)")

        let sources = try await CLITests.homepwner(["capture", "sources"], harness: harness)
        #expect(sources.status == 0 && sources.stdout.contains("library  yes") && sources.stdout.contains("camera   no"), "\(sources.stdout)")
    }

    @Test func itemPhotoAttachesDetachesOrdersAndPicksThePrimary() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start(.imageService)
        try harness.start(.itemService)
        let images = try harness.client(.imageService), items = try harness.client(.itemService)
        defer { images.close(); items.close() }
        var create = CreateItemRequest()
        create.name = "Desk"
        let item = try await items.call(ItemServiceRPC.createItem, create, options: .init(timeoutMilliseconds: 30_000)).key
        var keys: [String] = []
        for name in ["Landscape_1.jpg", "Landscape_2.jpg"] {
            var put = PutImageRequest()
            put.ownerKey = item
            put.data = try Fixtures.orientationPhoto(name)
            keys.append(try await images.call(ImageServiceRPC.putImage, put, options: .init(timeoutMilliseconds: 30_000)).key)
        }
        let first = try await CLITests.homepwner(["item", "photo", "add", item, keys[0]], harness: harness)
        #expect(first.status == 0 && first.stdout.contains("\(keys[0]) (primary)"), "\(first.stdout)\(first.stderr)")
        let second = try await CLITests.homepwner(["item", "photo", "add", item, keys[1], "--primary", "--json"], harness: harness)
        let attached = try #require(QueueCLITests.object(second.stdout), "\(second.stdout)\(second.stderr)")
        #expect(attached["primary_photo_key"] as? String == keys[1])
        let order = try await CLITests.homepwner(["item", "photo", "order", item, keys[1], keys[0]], harness: harness)
        #expect(order.status == 0 && order.stdout.contains("2 photo(s)\n  \(keys[1]) (primary)\n  \(keys[0])"), "\(order.stdout)")
        let primary = try await CLITests.homepwner(["item", "photo", "primary", item, keys[0]], harness: harness)
        #expect(primary.status == 0 && primary.stdout.contains("\(keys[0]) (primary)"), "\(primary.stdout)")
        let removed = try await CLITests.homepwner(["item", "photo", "rm", item, keys[0]], harness: harness)
        #expect(removed.status == 0 && removed.stdout.contains("\(keys[1]) (primary)") && !removed.stdout.contains(keys[0]), "\(removed.stdout)")
        let again = try await CLITests.homepwner(["item", "photo", "rm", item, keys[0]], harness: harness)
        #expect(again.status == 4 && again.stderr.contains("not attached"), "\(again.stderr)")
        let usage = try await CLITests.homepwner(["item", "photo", "add", item], harness: harness)
        #expect(usage.status == 2 && usage.stderr.contains("expected ITEM and IMAGE"), "\(usage.stderr)")
        let help = try await CLITests.homepwner(["item", "photo", "--help"], harness: harness)
        #expect(help.status == 0 && help.stdout.contains("item photo order"), "\(help.stdout)")
    }

    @Test func badFlagsAreUsageErrorsAndEverySubcommandHasHelp() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        let item = UUID().uuidString
        let cases: [([String], String)] = [
            (["capture"], "give one ITEM"),
            (["capture", item], "exactly one of --file, --library, --recent, --camera"),
            (["capture", item, "--recent", "--camera"], "exactly one of"),
            (["capture", item, "--recent", "--zoom", "0"], "--zoom"),
            (["capture", item, "--recent", "--zoom", "nan"], "--zoom"),
            (["capture", item, "--recent", "--crop", "1,2,3"], "X,Y,W,H"),
            (["capture", item, "--recent", "--crop", "0,0,0,10"], "width and height"),
            (["capture", item, "--recent", "--square", "--circle"], "not both"),
            (["capture", item, "--recent", "--size", "-4"], "--size"),
            (["capture", item, "--file", "/no/such/file.jpg"], "no such file"),
            (["capture", "status"], "give one JOB"),
            (["capture", "save"], "give one IMAGE"),
        ]
        for (arguments, words) in cases {
            let run = try await CLITests.homepwner(arguments, harness: harness)
            #expect(run.status == 2 && run.stderr.contains(words), "\(arguments): \(run.status) \(run.stderr)")
        }
        for arguments in [["capture", "--help"], ["capture", "sources", "--help"], ["capture", "status", "--help"], ["capture", "save", "--help"]] {
            let run = try await CLITests.homepwner(arguments, harness: harness)
            #expect(run.status == 0 && run.stdout.contains("USAGE"), "\(arguments): \(run.stdout)")
        }
    }

    /// `capture --wait` with no capture worker says, after --stall-hint seconds, that nobody takes
    /// the capture queue's jobs, and waits on until a worker comes and does the job.
    @Test func aCaptureNobodyTakesSaysWhyAndIsDoneOnceAWorkerComes() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start(.imageService)
        try harness.start(.itemService)
        let items = try harness.client(.itemService)
        defer { items.close() }
        var create = CreateItemRequest()
        create.name = "Clock"
        let item = try await items.call(ItemServiceRPC.createItem, create, options: .init(timeoutMilliseconds: 30_000)).key
        let photo = FileManager.default.temporaryDirectory.appendingPathComponent("hp-stall-\(UUID().uuidString.prefix(8)).jpg").path
        try Data(try Fixtures.orientationPhoto("Portrait_1.jpg")).write(to: URL(fileURLWithPath: photo))
        defer { try? FileManager.default.removeItem(atPath: photo) }

        let run = try await CLITests.homepwner(["capture", item, "--file", photo, "--wait", "--stall-hint", "1"], harness: harness) { stderr in
            let said = try await eventually(within: 60) { stderr().contains("nothing finished in") }
            #expect(said, "no stall hint within 60 s")
            try harness.start(.captureWorker)
        }
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        #expect(run.stdout.contains("DONE"), "\(run.stdout)")
        #expect(run.stderr.contains("no worker is taking the capture queue's jobs") && run.stderr.contains("is a capture-worker running"),
                "\(run.stderr)")
    }
}
