import Digest
import Foundation
import Harness
import Proto
import RPC
import Runtime
import Testing
import TestSupport
import RPCTestSupport

/// The capture-worker executable against the services of a `CaptureSuite`: what only a process
/// of its own shows (the descriptors its camera commands get, the memory it holds).
@Suite struct CaptureWorkerProcessTests {
    /// Starts capture-worker on the suite's services and library, with `arguments` added.
    static func worker(_ suite: CaptureSuite, _ arguments: [String]) async throws -> ExecutableTests.Launched {
        let health = "ipc://" + (suite.library as NSString).deletingLastPathComponent + "/worker.sock"
        let worker = try ExecutableTests.launch(
            "capture-worker",
            ["--rpc", health, "--item-service", suite.harness.endpoint(.itemService),
             "--image-service", suite.harness.endpoint(.imageService), "--library", suite.library] + arguments,
            endpoint: health)
        let probe = try RPCClient(context: suite.harness.context, endpoint: health, configuration: .init(connectWaitMilliseconds: 20_000))
        defer { probe.close() }
        _ = try await probe.call(HealthRPC.check, HealthCheckRequest(), options: .init(timeoutMilliseconds: 30_000))
        return worker
    }

    static func stop(_ worker: ExecutableTests.Launched) async {
        kill(worker.process.processIdentifier, SIGTERM)
        if await !ExecutableTests.waitForExit(worker.process, seconds: 30) { kill(worker.process.processIdentifier, SIGKILL) }
    }

    @Test func concurrentCameraCapturesAllFinishAndNoneHoldsAnotherOnesOutput() async throws {
        let suite = try await CaptureSuite(startWorker: false)
        defer { suite.stop() }
        // Each command lists the descriptors it was given (from a subshell writing a file: a
        // redirection, a pipe or a command substitution in the shell would add its own) and is
        // still running when the next one starts. A command holding another one's output pipe keeps that one from seeing the
        // end of its photo until it exits too.
        let folder = (suite.library as NSString).deletingLastPathComponent + "/fds"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let photo = Fixtures.orientationFolder.path + "/Portrait_1.jpg"
        let camera = "(ls -l /proc/$$/fd) > '\(folder)/'$$; sleep 0.5; cat '\(photo)'"
        var queued: [CaptureJob] = []
        for _ in 0..<4 { queued.append(try await suite.enqueue { $0.source = .camera }) }
        let worker = try await Self.worker(suite, ["--camera", camera, "--camera-timeout-ms", "20000", "--concurrency", "4"])
        defer { if worker.process.isRunning { kill(worker.process.processIdentifier, SIGKILL) } }
        for job in queued {
            let ended = try await suite.finished(job.jobId)
            #expect(ended.state == .done, "\(ended.error)")
        }
        await Self.stop(worker)

        // Each command's descriptors, number → what it is ("pipe:[inode]"); its own output
        // and errors are 1 and 2.
        let listings = try FileManager.default.contentsOfDirectory(atPath: folder).map { name in
            try String(contentsOfFile: folder + "/" + name, encoding: .utf8).split(separator: "\n").reduce(into: [String: String]()) { table, line in
                let parts = line.split(separator: " ")
                if let arrow = parts.firstIndex(of: "->"), arrow > 0, arrow + 1 < parts.count {
                    table[String(parts[arrow - 1])] = String(parts[arrow + 1])
                }
            }
        }
        #expect(listings.count == 4)
        for (index, listing) in listings.enumerated() {
            let own = Set([listing["1"], listing["2"]].compactMap { $0 })
            #expect(own.count == 2 && own.allSatisfy { $0.hasPrefix("pipe:") }, "\(listing)")
            for (other, theirs) in listings.enumerated() where other != index {
                let held = theirs.filter { $0.key != "1" && $0.key != "2" && own.contains($0.value) }
                #expect(held.isEmpty, "a camera command holds another one's output: descriptors \(held)")
            }
        }
    }

    @Test func aCameraCommandThatClosesItsOutputAndLingersIsKilledAtItsTimeLimit() async throws {
        let suite = try await CaptureSuite(startWorker: false)
        defer { suite.stop() }
        // The photo printed, its output closed, then the command goes on past the limit.
        let photo = Fixtures.orientationFolder.path + "/Portrait_1.jpg"
        let worker = try await Self.worker(
            suite, ["--camera", "cat '\(photo)'; exec >&- 2>&-; sleep 90", "--camera-timeout-ms", "1000"])
        defer { if worker.process.isRunning { kill(worker.process.processIdentifier, SIGKILL) } }
        let job = try await suite.finished(try await suite.enqueue { $0.source = .camera }.jobId, within: 20)
        #expect(job.state == .dead && job.errorCode == StatusCode.deadlineExceeded.rawValue, "\(job.state) \(job.error)")
        #expect(job.error.contains("did not finish within 1000 ms"), "\(job.error)")
        #expect(try await suite.getItem().photoKeys.isEmpty)
        await Self.stop(worker)
    }

    @Test(.enabled(
        if: !Sanitizer.any,
        "the worker's peak RSS is what this checks, and a sanitizer's shadow memory and allocator (ASan's quarantine keeps freed blocks) add to it"))
    func aLibraryMovieOfTwoHundredMebibytesIsStoredWithoutTheWorkerHoldingIt() async throws {
        let suite = try await CaptureSuite(startWorker: false)
        defer { suite.stop() }
        let movie = CaptureSamples.movie(count: 200 << 20, seed: 7)
        try Data(movie).write(to: URL(fileURLWithPath: suite.library + "/walkthrough.mp4"))
        let worker = try await Self.worker(suite, [])
        defer { if worker.process.isRunning { kill(worker.process.processIdentifier, SIGKILL) } }
        let job = try await suite.capture { $0.source = .library; $0.sourcePath = "walkthrough.mp4" }
        #expect(job.state == .done, "\(job.error)")
        #expect(try await suite.info(job.originalKey).checksum == SHA256.checksum(movie))
        // Read and sent a piece at a time: the most it ever held is far below the movie.
        let peak = ProcessMemory.of(pid: worker.process.processIdentifier).peakResidentBytes
        #expect(peak > 0 && peak < 128 << 20, "capture-worker's peak resident memory: \(peak >> 20) MiB")
        await Self.stop(worker)
    }

    /// A photo bigger than the whole memory budget (a JPEG padded with metadata) would be read
    /// whole to be edited, over the budget even alone: it fails for good naming the limit, and
    /// the worker never holds it (issue 27, defect 14).
    @Test func aLibraryPhotoPaddedPastTheMemoryBudgetFailsNamingTheLimitUnread() async throws {
        let suite = try await CaptureSuite(startWorker: false)
        defer { suite.stop() }
        let padded = JPEGSplice.inserting(
            JPEGSplice.metadata(totalBytes: 96 << 20), beforeFrameOf: try Fixtures.orientationPhoto("Landscape_1.jpg"))
        try Data(padded).write(to: URL(fileURLWithPath: suite.library + "/trip/padded.jpg"))
        let worker = try await Self.worker(suite, ["--memory-mb", "64"])
        defer { if worker.process.isRunning { kill(worker.process.processIdentifier, SIGKILL) } }
        let job = try await suite.capture { $0.source = .library; $0.sourcePath = "trip/padded.jpg" }
        #expect(job.state == .dead && job.errorCode == StatusCode.failedPrecondition.rawValue, "\(job.state) \(job.error)")
        #expect(job.error.contains("trip/padded.jpg is a JPEG of \(padded.count) bytes, over this capture worker's memory budget of \(64 << 20) bytes (--memory-mb)"), "\(job.error)")
        #expect(try await suite.getItem().photoKeys.isEmpty)
        let peak = ProcessMemory.of(pid: worker.process.processIdentifier).peakResidentBytes
        #expect(peak > 0 && peak < 64 << 20, "capture-worker's peak resident memory: \(peak >> 20) MiB")
        await Self.stop(worker)
    }

    @Test func aJobRunningPastTheMaximumRunTimeIsStoppedAndFailedNamingTheLimit() async throws {
        let suite = try await CaptureSuite(startWorker: false)
        defer { suite.stop() }
        // A camera that takes a minute, within its own limit; the worker lets a job run 2 s,
        // while its heartbeats would keep the lease for ever.
        let pidFile = (suite.library as NSString).deletingLastPathComponent + "/camera.pid"
        let photo = Fixtures.orientationFolder.path + "/Portrait_1.jpg"
        let worker = try await Self.worker(suite, [
            "--camera", "echo $$ > '\(pidFile)'; sleep 60; cat '\(photo)'", "--camera-timeout-ms", "120000",
            "--max-job-ms", "2000", "--lease-ms", "1000",
        ])
        defer { if worker.process.isRunning { kill(worker.process.processIdentifier, SIGKILL) } }
        let job = try await suite.finished(try await suite.enqueue { $0.source = .camera }.jobId, within: 20)
        #expect(job.state == .dead && job.attempts == 1 && job.errorCode == StatusCode.deadlineExceeded.rawValue, "\(job.state) \(job.error)")
        #expect(job.error.contains("2000 ms") && job.error.contains("--max-job-ms"), "\(job.error)")
        // The camera command it was waiting for is gone too.
        let pid = try #require(Int32(try String(contentsOfFile: pidFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(try await eventually(within: 10) { kill(pid, 0) != 0 }, "the camera command \(pid) still runs")
        await Self.stop(worker)
    }
}
