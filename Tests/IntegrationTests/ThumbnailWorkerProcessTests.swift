import Foundation
import JPEG
import Proto
import RPC
import Locking
import Testing
import ThumbnailWorker
import ZMQ

/// The thumbnail-worker executable against the image-service executable, killed at bad moments.
@Suite struct ThumbnailWorkerProcessTests {
    static let patient = CallOptions(timeoutMilliseconds: 30_000)

    /// A 6000×4000 gradient (24 MP): long enough to decode that a kill lands mid-job.
    static func largeJPEG(seed: Int) throws -> [UInt8] {
        let width = 6000, height = 4000
        var pixels = [UInt8](repeating: 0, count: width * height * 3)
        for y in 0..<height {
            for x in 0..<width {
                let at = (y * width + x) * 3
                pixels[at] = UInt8((x + seed) & 0xFF)
                pixels[at + 1] = UInt8((y * 3 + seed) & 0xFF)
                pixels[at + 2] = UInt8((x ^ y) & 0xFF)
            }
        }
        return try JPEG.encode(RGBImage(width: width, height: height, pixels: pixels), quality: 90)
    }

    static func jobs(_ client: RPCClient, _ state: JobState) async throws -> [Job] {
        var request = ListJobsRequest()
        request.queue = "thumbnails"
        request.state = state
        return try await client.call(JobQueueRPC.listJobs, request, options: patient).jobs
    }

    static func pause(_ client: RPCClient, _ paused: Bool) async throws {
        var request = PauseQueueRequest()
        request.queue = "thumbnails"
        request.paused = paused
        _ = try await client.call(JobQueueRPC.pauseQueue, request, options: patient)
    }

    static func waitForHealth(_ endpoint: String) async throws {
        let probe = try RPCClient(context: ExecutableTests.context, endpoint: endpoint, configuration: .init(connectWaitMilliseconds: 20_000))
        defer { probe.close() }
        _ = try await probe.call(HealthRPC.check, HealthCheckRequest(), options: patient)
    }

    static func worker(_ folder: String, _ name: String, imageService: String) throws -> ExecutableTests.Launched {
        let health = "ipc://\(folder)/\(name).sock"
        // Leases of 2 s, so the dead worker's job returns quickly; one job at a time.
        return try ExecutableTests.launch(
            "thumbnail-worker", ["--rpc", health, "--image-service", imageService, "--lease-ms", "2000", "--concurrency", "1"],
            endpoint: health)
    }

    @Test func aWorkerKilledMidJobLeavesItToTheNextWhichStoresItsThumbnailsOnce() async throws {
        let folder = try ExecutableTests.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let rpc = "ipc://\(folder)/images.sock"
        let service = try ExecutableTests.launch(
            "image-service", ["--rpc", rpc, "--events", "ipc://\(folder)/events.sock", "--data-dir", folder + "/data"], endpoint: rpc)
        defer { if service.process.isRunning { service.process.terminate() } }
        let client = try RPCClient(context: ExecutableTests.context, endpoint: rpc, configuration: .init(connectWaitMilliseconds: 10_000))
        defer { client.close() }
        var keys: [String] = []
        for seed in 0..<4 {
            var put = PutImageRequest()
            put.data = try Self.largeJPEG(seed: seed)
            keys.append(try await client.call(ImageServiceRPC.putImage, put, options: Self.patient).key)
        }

        // A worker dies holding a job, whatever the machine's load: the queue is paused, the
        // worker starts (its Lease waits), is frozen (SIGSTOP), the queue resumes, and the
        // waiting Lease gives the frozen worker a job it can never finish; then SIGKILL.
        try await Self.pause(client, true)
        let doomed = try Self.worker(folder, "doomed", imageService: rpc)
        defer { if doomed.process.isRunning { kill(doomed.process.processIdentifier, SIGKILL) } }
        try await Self.waitForHealth("ipc://\(folder)/doomed.sock")
        let end = ContinuousClock.now + .seconds(120)
        var held: [Job] = []
        while held.isEmpty && ContinuousClock.now < end {
            kill(doomed.process.processIdentifier, SIGSTOP)
            try await Self.pause(client, false)
            let waited = ContinuousClock.now + .seconds(2)
            while held.isEmpty && ContinuousClock.now < waited {
                held = try await Self.jobs(client, .running)
                try await Task.sleep(for: .milliseconds(20))
            }
            // Its Lease was not waiting yet when it froze: let it run a moment (far less than a
            // job takes) with the queue paused, and try again.
            if held.isEmpty {
                try await Self.pause(client, true)
                kill(doomed.process.processIdentifier, SIGCONT)
                try await Task.sleep(for: .milliseconds(200))
            }
        }
        kill(doomed.process.processIdentifier, SIGKILL)
        #expect(await ExecutableTests.waitForExit(doomed.process, seconds: 10))
        let victim = try #require(held.first, "no job was leased to the frozen worker")
        // One job made at a time, and one more reading ahead (ThumbnailWorkerHost.readAhead).
        #expect((1...1 + ThumbnailWorkerHost.readAhead).contains(held.count) && held.allSatisfy { $0.attempts == 1 }, "\(held)")

        let next = try Self.worker(folder, "next", imageService: rpc)
        defer { if next.process.isRunning { next.process.terminate() } }
        while try await Self.jobs(client, .done).count < 4 && ContinuousClock.now < end {
            try await Task.sleep(for: .milliseconds(50))
        }
        let done = try await Self.jobs(client, .done)
        #expect(done.count == 4)
        // Every job the dead worker held ran again once its lease expired, by the next worker.
        for lost in held {
            let again = try #require(done.first { $0.jobId == lost.jobId })
            #expect(again.attempts == 2 && again.errors.map(\.message) == ["lease expired"], "\(again)")
            #expect(again.errors.first?.workerId == victim.workerId && again.workerId != victim.workerId)
        }

        // Each image has its three thumbnails, made once: no duplicates, no stray files.
        var list = ListImagesRequest()
        list.kind = .thumbnail
        list.pageSize = 100
        let thumbnails = try await client.call(ImageServiceRPC.listImages, list, options: Self.patient).images
        #expect(thumbnails.count == 12)
        for key in keys {
            let sizes = thumbnails.filter { $0.parentKey == key }.map { max($0.width, $0.height) }.sorted()
            #expect(sizes == [64, 256, 1024], "\(key): \(sizes)")
        }
        let files = FileManager.default.enumerator(atPath: folder + "/data/images/blobs")?
            .compactMap { $0 as? String }.filter { ($0 as NSString).lastPathComponent.utf8.count == 36 } ?? []
        #expect(files.count == 16)

        // SIGTERM with nothing left: the worker stops cleanly.
        kill(next.process.processIdentifier, SIGTERM)
        #expect(await ExecutableTests.waitForExit(next.process, seconds: 20))
        #expect(next.process.terminationStatus == 0)
    }

    @Test func aSIGKILLDuringPutsLeavesEveryStoredJPEGWithItsJobAndNoJobWithoutItsImage() async throws {
        let folder = try ExecutableTests.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let rpc = "ipc://\(folder)/images.sock"
        let arguments = ["--rpc", rpc, "--events", "ipc://\(folder)/events.sock", "--data-dir", folder + "/data"]
        let first = try ExecutableTests.launch("image-service", arguments, endpoint: rpc)
        defer { if first.process.isRunning { kill(first.process.processIdentifier, SIGKILL) } }
        let client = try RPCClient(context: ExecutableTests.context, endpoint: rpc, configuration: .init(connectWaitMilliseconds: 10_000))
        defer { client.close() }
        _ = try await client.call(HealthRPC.check, HealthCheckRequest(), options: Self.patient)

        // Two writers put JPEGs until the kill, which lands among puts in flight.
        let shared = Puts(), pid = first.process.processIdentifier
        await withTaskGroup(of: Void.self) { group in
            for writer in 0..<2 {
                group.addTask {
                    for seed in stride(from: writer, to: 100_000, by: 2) {
                        var put = PutImageRequest()
                        guard let jpeg = try? CascadeOrderTests.jpeg(width: 64, height: 48, seed: seed) else { return }
                        put.data = jpeg
                        do {
                            _ = try await client.call(ImageServiceRPC.putImage, put, options: .init(timeoutMilliseconds: 3000, retry: .none))
                            shared.acknowledged.withLock { $0 += 1 }
                        } catch {
                            if shared.killed.withLock({ $0 }) { return }
                        }
                    }
                }
            }
            group.addTask {
                let end = ContinuousClock.now + .seconds(60)
                while shared.acknowledged.withLock({ $0 }) < 20 && ContinuousClock.now < end { try? await Task.sleep(for: .milliseconds(5)) }
                shared.killed.withLock { $0 = true }
                kill(pid, SIGKILL)
            }
        }
        #expect(await ExecutableTests.waitForExit(first.process, seconds: 10))

        let second = try ExecutableTests.launch("image-service", arguments, endpoint: rpc)
        defer { if second.process.isRunning { second.process.terminate() } }
        var list = ListImagesRequest()
        list.kind = .original
        list.pageSize = 1000
        let stored = Set(try await client.call(ImageServiceRPC.listImages, list, options: Self.patient).images.map(\.key))
        var jobs = ListJobsRequest()
        jobs.queue = "thumbnails"
        jobs.state = .queued
        jobs.pageSize = 1000
        let queued = try await client.call(JobQueueRPC.listJobs, jobs, options: Self.patient).jobs
        let jobKeys = try queued.map { try ThumbnailJob(serializedBytes: $0.payload).imageKey }
        #expect(stored.count >= shared.acknowledged.withLock { $0 } && stored.count >= 20)
        #expect(Set(jobKeys) == stored && jobKeys.count == stored.count, "\(stored.count) images, \(jobKeys.count) jobs")
    }

    /// What the writers of the SIGKILL test share.
    final class Puts: Sendable {
        let acknowledged = Locked(0)
        let killed = Locked(false)
    }
}
