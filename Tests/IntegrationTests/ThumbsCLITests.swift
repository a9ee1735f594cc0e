import Foundation
import Harness
import Proto
import RPC
import Testing
import TestSupport

/// `homepwner thumbs batch|status` through the real executable against image-service and the
/// thumbnail worker in the harness.
@Suite struct ThumbsCLITests {
    @Test func batchOfMissingThumbnailsWaitsUntilTheWorkerIsDoneAndStatusShowsIt() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start(.imageService)
        let client = try harness.client(.imageService)
        defer { client.close() }
        let keys = try await QueueCLITests.putPhotos(["Landscape_1.jpg", "Portrait_5.jpg"], client: client)
        try harness.start(.thumbnailWorker)

        // Sizes the puts did not ask for: two new jobs, and the CLI follows them to the end.
        let run = try await CLITests.homepwner(["thumbs", "batch", "--missing", "--sizes", "32,48", "--json"], harness: harness)
        #expect(run.status == 0, "\(run.stderr)")
        let object = try #require(QueueCLITests.object(run.stdout), "\(run.stdout)")
        let enqueue = try #require(object["enqueue"] as? [String: Any]), batch = try #require(object["batch"] as? [String: Any])
        #expect(enqueue["enqueued"] as? String == "2" && batch["done"] as? String == "2" && batch["pending"] as? String == "0")
        // Without a terminal the progress is a line on stderr.
        #expect(run.stderr.contains("2/2"), "\(run.stderr)")
        var list = ListImagesRequest()
        list.kind = .thumbnail
        list.pageSize = 100
        let made = try await client.call(ImageServiceRPC.listImages, list).images
        for key in keys {
            let sizes = Set(made.filter { $0.parentKey == key }.map { max($0.width, $0.height) })
            #expect(sizes.isSuperset(of: [32, 48]), "\(key): \(sizes)")
        }

        // Asked again: every image has those sizes, so there is no batch to wait for.
        let again = try await CLITests.homepwner(["thumbs", "batch", "--missing", "--sizes", "32,48"], harness: harness)
        #expect(again.status == 0 && again.stdout.contains("no batch: nothing to make") && again.stdout.contains("2 with every size"),
                "\(again.stdout)\(again.stderr)")

        let batchID = try #require(batch["batch_id"] as? String)
        let status = try await CLITests.homepwner(["thumbs", "status", batchID], harness: harness)
        #expect(status.status == 0 && status.stdout.contains("done") && status.stdout.contains("2"), "\(status.stdout)")
    }

    @Test func batchRefusesWhatItCannotDoWithUsageAndServiceExitCodes() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start(.imageService)
        let none = try await CLITests.homepwner(["thumbs", "batch"], harness: harness)
        #expect(none.status == 2 && none.stderr.contains("--missing, --all or KEYs"))
        let both = try await CLITests.homepwner(["thumbs", "batch", "--all", "--missing"], harness: harness)
        #expect(both.status == 2)
        let sizes = try await CLITests.homepwner(["thumbs", "batch", "--all", "--sizes", "64,big"], harness: harness)
        #expect(sizes.status == 2 && sizes.stderr.contains("64,big"))
        let unknown = try await CLITests.homepwner(["thumbs", "batch", UUID().uuidString, "--no-wait"], harness: harness)
        #expect(unknown.status == 4 && unknown.stderr.contains("no such image"), "\(unknown.stderr)")
        let range = try await CLITests.homepwner(["thumbs", "batch", "--all", "--sizes", "9000"], harness: harness)
        #expect(range.status == 3 && range.stderr.contains("9000 is not a new size"), "\(range.stderr)")
        for arguments in [["thumbs", "--help"], ["thumbs", "batch", "--help"], ["thumbs", "status", "--help"]] {
            #expect(try await CLITests.homepwner(arguments, harness: harness).status == 0)
        }
    }

    /// A batch nobody works on does not leave its watcher guessing: after --stall-hint seconds
    /// without a finished job the CLI says why (no worker; the queue paused), and it goes on
    /// waiting until the batch is done.
    @Test func aBatchThatDoesNotMoveSaysWhyAndFinishesOnceItCan() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start(.imageService)
        let client = try harness.client(.imageService)
        defer { client.close() }
        _ = try await QueueCLITests.putPhotos(["Landscape_1.jpg"], client: client)

        // No worker yet: one comes once the CLI has said why nothing moves.
        let first = try await CLITests.homepwner(["thumbs", "batch", "--missing", "--sizes", "40", "--stall-hint", "1"], harness: harness) { stderr in
            let said = try await eventually(within: 60) { stderr().contains("nothing finished in") }
            #expect(said, "no stall hint within 60 s")
            try harness.start(.thumbnailWorker)
        }
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stderr.contains("no worker is taking the thumbnails queue's jobs"), "\(first.stderr)")
        #expect(first.stderr.contains("is a thumbnail-worker running"), "\(first.stderr)")
        #expect(first.stderr.components(separatedBy: "nothing finished in").count == 2, "said once: \(first.stderr)")

        // A worker, and the queue paused.
        let pause = try await CLITests.homepwner(["queue", "pause", "thumbnails"], harness: harness)
        #expect(pause.status == 0, "\(pause.stderr)")
        let second = try await CLITests.homepwner(["thumbs", "batch", "--missing", "--sizes", "48", "--stall-hint", "1"], harness: harness) { stderr in
            let said = try await eventually(within: 60) { stderr().contains("nothing finished in") }
            #expect(said, "no stall hint within 60 s")
            let resume = try await CLITests.homepwner(["queue", "resume", "thumbnails"], harness: harness)
            #expect(resume.status == 0, "\(resume.stderr)")
        }
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.stderr.contains("the thumbnails queue is paused; `homepwner queue resume thumbnails`"), "\(second.stderr)")

        // Never, with 0; a bad value is a usage error.
        let never = try await CLITests.homepwner(["thumbs", "batch", "--all", "--stall-hint", "0"], harness: harness)
        #expect(never.status == 0 && !never.stderr.contains("nothing finished in"), "\(never.stderr)")
        let bad = try await CLITests.homepwner(["thumbs", "batch", "--all", "--stall-hint", "soon"], harness: harness)
        #expect(bad.status == 2 && bad.stderr.contains("--stall-hint 'soon'"), "\(bad.stderr)")
    }
}
