import Foundation
import Proto
import RPC
import Runtime
import ZMQ

/// `homepwner-bench capture`: captures of a 12-megapixel photo with a square edit, end to end
/// (image-service, item-service and capture-worker as processes of this build, the photo in the
/// library folder, each capture a job of its own for an item of its own, timed from the first
/// job's creation to the last one done, on item-service's clock), next to a bare C loop over
/// libjpeg-turbo doing the pixel work of one (ops/capture/capture.c: decode, centred square,
/// encode at quality 90), on the same photo, one and two workers, alternated rounds.
enum CaptureBenchmark {
    typealias Result = ThumbsBenchmark.Result

    static func run(_ arguments: [String]) async {
        func option(_ name: String, _ fallback: String) -> String {
            arguments.firstIndex(of: name).flatMap { arguments.indices.contains($0 + 1) ? arguments[$0 + 1] : nil } ?? fallback
        }
        let roundCount = max(1, Int(option("--rounds", "3")) ?? 3)
        let captures = max(2, Int(option("--captures", "24")) ?? 24)
        do {
            let prepared = try ThumbsBenchmark.output(of: "ops/capture/prepare", [])
            guard prepared.count == 2 else { throw ThumbsBenchmark.Failure("ops/capture/prepare printed \(prepared)") }
            let (cLoop, photo) = (prepared[0], prepared[1])
            let size = (try FileManager.default.attributesOfItem(atPath: photo)[.size] as? Int) ?? 0
            print("""
                a 4000×3000 JPEG of \(size / 1000) KB, SQUARE edit (3000×3000 out), \(captures) captures a round, \
                median of \(roundCount) alternated round(s), \(ProcessInfo.processInfo.activeProcessorCount) cores
                """)
            let context = try Context()
            let suite = try Suite(context: context, photo: photo)
            defer { suite.close() }
            var rounds: [[Result]] = []
            for _ in 0..<roundCount {
                var round: [Result] = []
                for workers in [1, 2] {
                    round.append(try external("C loop (libjpeg-turbo): decode, square, encode", workers, cLoop,
                        ["\(workers)", "\(max(1, captures / workers))", photo]))
                }
                for workers in [1, 2] {
                    try await suite.startWorker(workers: workers, context: context)
                    round.append(try await suite.round(captures, workers: workers))
                }
                suite.stopWorker()
                rounds.append(round)
            }
            let results = rounds[0].indices.map { column in
                rounds.map { $0[column] }.sorted { $0.perSecond < $1.perSecond }[roundCount / 2]
            }
            // Each ratio: per round, end to end over the C loop with as many workers; the median and range.
            func ratios(_ workers: Int) -> String {
                let values = rounds.map { round in
                    round.first { !$0.name.hasPrefix("C") && $0.workers == workers }!.perSecond
                        / round.first { $0.name.hasPrefix("C") && $0.workers == workers }!.perSecond
                }.sorted()
                return String(format: "%.2f (%.2f–%.2f)", values[values.count / 2], values.first!, values.last!)
            }
            print("""

                | contender | workers | captures/s | vs C loop, same workers (median, min–max of rounds) |
                |---|---|---|---|
                """)
            for result in results {
                let ratio = result.name.hasPrefix("C") ? "1.00" : ratios(result.workers)
                print(String(format: "| %@ | %d | %.2f | %@ |", result.name, result.workers, result.perSecond, ratio))
            }
        } catch {
            FileHandle.standardError.write(Data("capture benchmark failed: \(error)\n".utf8))
            exit(1)
        }
    }

    /// A C loop process, which prints "captures N seconds S bytes B".
    static func external(_ name: String, _ workers: Int, _ executable: String, _ arguments: [String]) throws -> Result {
        let words = try ThumbsBenchmark.output(of: executable, arguments).last?.split(separator: " ").map(String.init) ?? []
        guard words.count == 6, let count = Int(words[1]), let seconds = Double(words[3]), let bytes = Int(words[5]) else {
            throw ThumbsBenchmark.Failure("\(name) printed \(words)")
        }
        return Result(name: name, workers: workers, images: count, seconds: seconds, bytes: bytes)
    }

    /// The three processes on ipc sockets in a temporary folder, the photo in their library.
    final class Suite {
        let folder: String
        let imageService: Process
        let itemService: Process
        var worker: Process?
        let items: RPCClient
        let itemRPC: String, imageRPC: String, library: String

        init(context: Context, photo: String) throws {
            folder = NSTemporaryDirectory() + "hp-bench-capture-\(UUID().uuidString.prefix(8))"
            library = folder + "/library"
            try FileManager.default.createDirectory(atPath: library, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: photo, toPath: library + "/photo.jpg")
            itemRPC = "ipc://\(folder)/items.sock"
            imageRPC = "ipc://\(folder)/images.sock"
            imageService = try ThumbsBenchmark.Suite.launch("image-service", [
                "--rpc", imageRPC, "--events", "ipc://\(folder)/image-events.sock", "--data-dir", folder + "/data", "--log-level", "warning",
            ])
            itemService = try ThumbsBenchmark.Suite.launch("item-service", [
                "--rpc", itemRPC, "--events", "ipc://\(folder)/item-events.sock", "--data-dir", folder + "/data",
                "--image-service", imageRPC, "--library", library, "--log-level", "warning",
            ])
            items = try RPCClient(context: context, endpoint: itemRPC, configuration: .init(connectWaitMilliseconds: 10_000))
        }

        func startWorker(workers: Int, context: Context) async throws {
            stopWorker()
            let health = "ipc://\(folder)/worker.sock"
            worker = try await ThumbsBenchmark.Suite.launchAnswering("capture-worker", [
                "--rpc", health, "--item-service", itemRPC, "--image-service", imageRPC, "--library", library,
                "--concurrency", String(workers), "--log-level", "warning",
            ], health: health, context: context)
        }

        func stopWorker() {
            guard let worker else { return }
            worker.terminate()
            worker.waitUntilExit()
            self.worker = nil
        }

        /// `count` captures, one per new item, all enqueued at once; the seconds from the first
        /// job's creation to the last one's end, on item-service's clock.
        func round(_ count: Int, workers: Int) async throws -> Result {
            var keys: [String] = []
            for index in 0..<count {
                var create = CreateItemRequest()
                create.name = "bench \(index)"
                keys.append(try await items.call(ItemServiceRPC.createItem, create).key)
            }
            var edit = Edit()
            edit.shape = .square
            var jobs: [String] = []
            for key in keys {
                var request = CaptureRequest()
                request.itemKey = key
                request.source = .library
                request.sourcePath = "photo.jpg"
                request.edit = edit
                jobs.append(try await items.call(CaptureServiceRPC.capture, request).job!.jobId)
            }
            var finished: [CaptureJob] = []
            for id in jobs {
                var get = GetCaptureJobRequest()
                get.jobId = id
                while true {
                    let job = try await items.call(CaptureServiceRPC.getCaptureJob, get).job!
                    if job.state == .dead { throw ThumbsBenchmark.Failure("capture job \(id) failed: \(job.error)") }
                    if job.state == .done {
                        finished.append(job)
                        break
                    }
                    try await Task.sleep(for: .milliseconds(20))
                }
            }
            let start = finished.map(\.createdAtMs).min()!, end = finished.map(\.updatedAtMs).max()!
            return Result(
                name: "end to end: capture-worker through the queue", workers: workers, images: count,
                seconds: Double(end - start) / 1000, bytes: 0)
        }

        func close() {
            stopWorker()
            items.close()
            for process in [itemService, imageService] {
                process.terminate()
                process.waitUntilExit()
            }
            try? FileManager.default.removeItem(atPath: folder)
        }
    }
}
