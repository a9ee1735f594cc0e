import Foundation
import Harness
import Locking
import Testing
import TestSupport

/// `homepwner` as a user runs it, against a suite brought up by the harness.
@Suite struct CLITests {
    struct Run {
        let status: Int32
        let stdout: String
        let stderr: String
    }

    static func homepwner(
        _ arguments: [String], harness: Harness? = nil, environment extra: [String: String] = [:],
        meanwhile: (@Sendable (_ stderrSoFar: @Sendable () -> String) async throws -> Void)? = nil
    ) async throws -> Run {
        let process = Process()
        process.executableURL = ExecutableTests.binDirectory.appendingPathComponent("homepwner")
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        if let harness {
            environment["HOMEPWNER_ITEM_RPC"] = harness.endpoints.itemRPC
            environment["HOMEPWNER_IMAGE_RPC"] = harness.endpoints.imageRPC
        }
        environment.merge(extra) { $1 }
        process.environment = environment
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        // A command that hangs is stopped after two minutes (the test then fails on its status)
        // instead of hanging the suite.
        let watchdog = Task {
            try await Task.sleep(for: .seconds(120))
            if process.isRunning { process.terminate() }
        }
        defer { watchdog.cancel() }
        // Read on plain threads: a full pipe would block the child, and a blocking read on the
        // task pool (even in a detached task) holds one of its two threads, starving the
        // service handlers that run there.
        let errors = Shared(Data())
        async let stdout = readOnThread(out.fileHandleForReading)
        async let stderr = readOnThread(err.fileHandleForReading, into: errors)
        // What the test does while the command runs, seeing its stderr so far.
        try await meanwhile?({ String(decoding: errors.value, as: UTF8.self) })
        let (o, e) = await (stdout, stderr)
        while process.isRunning { try await Task.sleep(for: .milliseconds(10)) }
        return Run(
            status: process.terminationStatus, stdout: String(decoding: o, as: UTF8.self),
            stderr: String(decoding: e, as: UTF8.self))
    }

    /// Reads a pipe to its end on a dedicated thread; what came so far is in `collected`.
    static func readOnThread(_ handle: FileHandle, into collected: Shared<Data> = Shared(Data())) async -> Data {
        await withVisibleCheckedContinuation { continuation in
            Thread {
                while case let chunk = handle.availableData, !chunk.isEmpty { collected.withLock { $0.append(chunk) } }
                continuation.resume(returning: collected.value)
            }.start()
        }
    }

    @Test func callPrintsTheJSONResponse() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start()
        let run = try await Self.homepwner(["call", "Health/Check", "{\"service\": \"homepwner.v1.Health\"}"], harness: harness)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("\"status\": \"SERVING\""))
        #expect(run.stdout.contains("\"process\": \"item-service\""))
        let image = try await Self.homepwner(["call", "Health/Check", "--to", "image", "--compact"], harness: harness)
        #expect(image.status == 0)
        #expect(image.stdout.contains("\"process\":\"image-service\""))
        // A status from the server comes back as its exit code and is named on stderr.
        let missing = try await Self.homepwner(
            ["call", "ItemService/GetItem", "{\"key\": \"\(UUID().uuidString.lowercased())\"}"], harness: harness)
        #expect(missing.status == 4, "\(missing.stderr)")
        #expect(missing.stderr.contains("NOT_FOUND"))
    }

    @Test func callExitCodesTellScriptsWhatWentWrong() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start()
        let unknownMethod = try await Self.homepwner(["call", "ItemService/Explode"], harness: harness)
        #expect(unknownMethod.status == 2)
        #expect(unknownMethod.stderr.contains("unknown method 'ItemService/Explode'"))

        let badJSON = try await Self.homepwner(["call", "Health/Check", "{\"servce\": 1}"], harness: harness)
        #expect(badJSON.status == 3)
        #expect(badJSON.stderr.contains("unknown field \"servce\""))

        await offThePool { harness.stop(.itemService) }
        let down = try await Self.homepwner(["call", "Health/Check", "--json", "--timeout", "3000"], harness: harness)
        #expect(down.status == 5)
        #expect(down.stdout.contains("\"status\": \"UNAVAILABLE\""))
    }

    @Test func callSendsAJobQueueRequestToTheProcessOfItsQueue() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start()
        await offThePool { harness.stop(.imageService) }
        // "thumbnails" in another field does not send a "capture" request to image-service: a
        // live process answers it (item-service, which serves no JobQueue yet: UNIMPLEMENTED).
        let capture = try await Self.homepwner(
            ["call", "JobQueue/Lease", "{\"queue\": \"capture\", \"workerId\": \"thumbnails-1\"}", "--json", "--timeout", "3000"],
            harness: harness)
        #expect(capture.status != 5, "\(capture.stdout)")
        #expect(!capture.stdout.contains("UNAVAILABLE"), "\(capture.stdout)")
        // The "thumbnails" queue goes to image-service, which is down.
        let thumbnails = try await Self.homepwner(
            ["call", "JobQueue/Stats", "{\"queue\": \"thumbnails\"}", "--json", "--timeout", "3000"], harness: harness)
        #expect(thumbnails.status == 5)
        #expect(thumbnails.stdout.contains("\"status\": \"UNAVAILABLE\""))
    }

    @Test func healthReportsEachServiceAndFailsWhenOneIsDown() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start()
        let up = try await Self.homepwner(["health"], harness: harness)
        #expect(up.status == 0)
        #expect(up.stdout.contains("item-service") && up.stdout.contains("image-service"))
        await offThePool { harness.stop(.imageService) }
        let down = try await Self.homepwner(["health", "--json"], harness: harness)
        #expect(down.status == 5)
        #expect(down.stdout.contains("\"status\": \"UNAVAILABLE\""))
        #expect(down.stdout.contains("\"status\": \"SERVING\""))
    }

    @Test func watchPrintsEventsAsTheyHappen() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start()
        let watch = Process()
        watch.executableURL = ExecutableTests.binDirectory.appendingPathComponent("homepwner")
        watch.arguments = [
            "watch", "item.created", "--count", "1", "--json",
            "--item-events", harness.endpoints.itemEvents, "--image-events", harness.endpoints.imageEvents,
        ]
        let out = Pipe()
        watch.standardOutput = out
        try watch.run()
        defer { if watch.isRunning { watch.terminate() } }
        async let printed = Self.readOnThread(out.fileHandleForReading)
        // A subscription takes effect asynchronously: add items until the watcher has seen one.
        for attempt in 0..<200 where watch.isRunning {
            _ = try await Self.homepwner(["item", "add", "Watched Spork \(attempt)"], harness: harness)
            try await Task.sleep(for: .milliseconds(50))
        }
        let text = String(decoding: await printed, as: UTF8.self)
        #expect(text.hasPrefix("{\"topic\": \"item.created\", \"event\": {"), "\(text)")
        #expect(text.contains("Watched Spork"))
    }

    @Test func helpAndUnknownCommandsAreFriendly() async throws {
        let help = try await Self.homepwner(["--help"])
        #expect(help.status == 0)
        for command in ["up", "health", "call", "methods", "item", "image", "cache", "watch"] {
            #expect(help.stdout.contains(command))
        }
        let callHelp = try await Self.homepwner(["call", "--help"])
        #expect(callHelp.status == 0 && callHelp.stdout.contains("--idempotency-key"))
        let typo = try await Self.homepwner(["helth"])
        #expect(typo.status == 2 && typo.stderr.contains("did you mean 'health'"))
        let methods = try await Self.homepwner(["methods"])
        #expect(methods.stdout.contains("/homepwner.v1.ItemService/CreateItem(homepwner.v1.CreateItemRequest) returns (homepwner.v1.Item)"))
    }
}
