import Foundation
import Proto
import RPC
import Runtime
import ZMQ

/// The end-to-end contender of `homepwner-bench thumbs`: the image-service and thumbnail-worker
/// executables of this build as separate processes, the corpus stored once, then each round a
/// batch (EnqueueThumbnails of every image, every size) timed by the batch itself, from its
/// creation to its last job done, on the service's clock.
extension ThumbsBenchmark {
    /// The two processes, on ipc sockets in a temporary folder.
    final class Suite {
        let folder: String
        let service: Process
        var worker: Process?
        let client: RPCClient
        let rpc: String

        init(context: Context) throws {
            folder = NSTemporaryDirectory() + "hp-bench-thumbs-\(UUID().uuidString.prefix(8))"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            rpc = "ipc://\(folder)/images.sock"
            // No thumbnails queued by the puts: every round's batch is the whole of its work.
            service = try Self.launch("image-service", [
                "--rpc", rpc, "--events", "ipc://\(folder)/events.sock", "--data-dir", folder + "/data",
                "--thumbnail-sizes", "", "--log-level", "warning",
            ])
            client = try RPCClient(context: context, endpoint: rpc, configuration: .init(connectWaitMilliseconds: 10_000))
        }

        /// An executable of this build (beside homepwner-bench), its stdout discarded and its
        /// stderr this process's, or `standardError` when given.
        static func launch(_ name: String, _ arguments: [String], standardError: FileHandle? = nil) throws -> Process {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(name)
            process.arguments = arguments
            process.standardOutput = FileHandle.nullDevice
            if let standardError { process.standardError = standardError }
            try process.run()
            return process
        }

        func store(_ photos: [[UInt8]]) async throws {
            for photo in photos {
                var put = PutImageRequest()
                put.data = photo
                _ = try await client.call(ImageServiceRPC.putImage, put, options: .init(timeoutMilliseconds: 60_000))
            }
        }

        /// Replaces the worker by one running `workers` jobs at once, and waits until it answers.
        func startWorker(workers: Int, context: Context) async throws {
            stopWorker()
            let health = "ipc://\(folder)/worker.sock"
            worker = try await Self.launchAnswering("thumbnail-worker", [
                "--rpc", health, "--image-service", rpc, "--concurrency", String(workers), "--log-level", "warning",
            ], health: health, context: context)
        }

        /// `launch`, then waits until the process answers Health/Check on `health`.
        static func launchAnswering(
            _ name: String, _ arguments: [String], health: String, context: Context, standardError: FileHandle? = nil
        ) async throws -> Process {
            let process = try launch(name, arguments, standardError: standardError)
            let probe = try RPCClient(context: context, endpoint: health, configuration: .init(connectWaitMilliseconds: 10_000))
            defer { probe.close() }
            _ = try await probe.call(HealthRPC.check, HealthCheckRequest(), options: .init(timeoutMilliseconds: 20_000))
            return process
        }

        func stopWorker() {
            guard let worker else { return }
            worker.terminate()
            worker.waitUntilExit()
            self.worker = nil
        }

        /// One batch of every image at `sizes`: its seconds (first job created to last one done)
        /// and the bytes of the thumbnails it stored.
        func batch(sizes: [Int]) async throws -> (seconds: Double, images: Int, bytes: Int) {
            var request = EnqueueThumbnailsRequest()
            request.all = true
            request.sizes = sizes.map { Int32($0) }
            let enqueued = try await client.call(ImageServiceRPC.enqueueThumbnails, request, options: .init(timeoutMilliseconds: 60_000))
            var get = GetBatchRequest()
            get.queue = JobQueueSpec.thumbnails.name
            get.batchId = enqueued.batchId
            var batch = try await client.call(JobQueueRPC.getBatch, get)
            while batch.pending > 0 {
                try await Task.sleep(for: .milliseconds(20))
                batch = try await client.call(JobQueueRPC.getBatch, get)
            }
            guard batch.dead == 0 else { throw Failure("\(batch.dead) thumbnail jobs of the batch are dead") }
            var list = ListImagesRequest()
            list.kind = .thumbnail
            list.pageSize = 1000
            var bytes = 0
            while true {
                let page = try await client.call(ImageServiceRPC.listImages, list)
                bytes += page.images.reduce(0) { $0 + Int($1.sizeBytes) }
                guard !page.nextPageToken.isEmpty else { break }
                list.pageToken = page.nextPageToken
            }
            return (Double(batch.finishedAtMs - batch.createdAtMs) / 1000, Int(batch.total), bytes)
        }

        /// The worker's peak resident set (VmHWM), in MB.
        var workerPeakMegabytes: Double {
            guard let worker else { return 0 }
            return Double(ProcessMemory.of(pid: worker.processIdentifier).peakResidentBytes) / 1_048_576
        }

        func close() {
            stopWorker()
            client.close()
            service.terminate()
            service.waitUntilExit()
            try? FileManager.default.removeItem(atPath: folder)
        }
    }

    /// The worker's peak RSS after making every size of each 18-megapixel progressive JPEG,
    /// one job at a time and then two.
    static func progressivePeak(_ photos: [[UInt8]], sizes: [Int], context: Context) async throws -> (one: Double, two: Double) {
        let suite = try Suite(context: context)
        defer { suite.close() }
        try await suite.store(photos)
        var peaks: [Double] = []
        for workers in [1, 2] {
            try await suite.startWorker(workers: workers, context: context)
            _ = try await suite.batch(sizes: sizes)
            peaks.append(suite.workerPeakMegabytes)
        }
        return (peaks[0], peaks[1])
    }
}
