import Foundation
import JPEG
import ZMQ
import Runtime
import Locking

/// `homepwner-bench thumbs`: the `Thumbnailer` in this process next to a bare C loop over
/// libjpeg-turbo doing the same decode-scale-resize-encode (ops/thumbs/thumbs.c) and Pillow in
/// draft mode (ops/thumbs/thumbs_pillow.py), on the same photos, one and two workers, in one run;
/// then the PNG and HEIC rows (`formats`; `--formats-only` runs only those; `--quick` runs only
/// the Thumbnailer and the C loop).
///
/// The corpus, the C binary and Pillow's venv come from ops/thumbs/prepare (a cache folder
/// outside the repository). Every contender reads the files into memory first and times only
/// the thumbnails: each photo once per round, FIT at `--sizes` (default 64,256,1024, one
/// decode each) and `--quality` (default 80), `--rounds` alternated rounds (default 3).
enum ThumbsBenchmark {
    struct Result {
        let name: String
        let workers: Int
        let images: Int
        let seconds: Double
        let bytes: Int

        var perSecond: Double { Double(images) / seconds }
    }

    static func run(_ arguments: [String]) async {
        func option(_ name: String, _ fallback: String) -> String {
            arguments.firstIndex(of: name).flatMap { arguments.indices.contains($0 + 1) ? arguments[$0 + 1] : nil } ?? fallback
        }
        let roundCount = max(1, Int(option("--rounds", "3")) ?? 3)
        let sizesText = option("--sizes", "64,256,1024"), quality = Int(option("--quality", "80")) ?? 80
        let sizes = sizesText.split(separator: ",").compactMap { Int($0) }
        do {
            let prepared = try output(of: "ops/thumbs/prepare", [])
            guard prepared.count == 8 else { throw Failure("ops/thumbs/prepare printed \(prepared)") }
            let (corpus, cLoop, python, progressive) = (prepared[0], prepared[1], prepared[2], prepared[3])
            if arguments.contains("--formats-only") {
                try formats(
                    binary: prepared[4], pngFolder: prepared[5], heicFolder: prepared[6], alphaFolder: prepared[7], sizes: sizes, sizesText: sizesText,
                    quality: quality, roundCount: roundCount)
                return
            }
            let files = try FileManager.default.subpathsOfDirectory(atPath: corpus)
                .filter { $0.lowercased().hasSuffix(".jpg") }.sorted().map { "\(corpus)/\($0)" }
            let photos = try files.map { [UInt8](try Data(contentsOf: URL(fileURLWithPath: $0))) }
            let megapixels = try photos.reduce(0.0) { sum, photo in
                let header = try JPEG.header(of: photo)
                return sum + Double(header.width * header.height) / 1e6
            }
            print("""
                \(photos.count) JPEGs, \(photos.reduce(0) { $0 + $1.count } / 1_000_000) MB, \
                \(String(format: "%.0f", megapixels)) megapixels; FIT \(sizesText) at quality \(quality), \
                median of \(roundCount) alternated round(s), \(ProcessInfo.processInfo.activeProcessorCount) cores
                """)
            // The Swift runs first: this process's peak RSS is then theirs (and the corpus's).
            // Rounds alternate the contenders, so a neighbour's load falls on all of them alike;
            // each row is the median of its rounds.
            var rounds: [[Result]] = []
            var peak = 0.0
            let common = ["1", "\(quality)", sizesText] + files
            if quality != Thumbnailer.defaultQuality {
                print("(the end-to-end rows use the worker's quality, \(Thumbnailer.defaultQuality), not --quality \(quality))")
            }
            if arguments.contains("--quick") {
                // The Thumbnailer and the C loop alone: the implementation's ratio, in a minute.
                var rounds: [[Result]] = []
                for _ in 0..<roundCount {
                    var round: [Result] = []
                    for workers in [1, 2] {
                        round.append(try thumbnailer(photos, workers: workers, sizes: sizes, quality: quality))
                        round.append(try external("C loop (libjpeg-turbo)", workers, cLoop, ["\(workers)"] + common))
                    }
                    round.append(try areaAverageLoop(cLoop, common))
                    rounds.append(round)
                }
                report(rounds[0].indices.map { column in rounds.map { $0[column] }.sorted { $0.perSecond < $1.perSecond }[roundCount / 2] }, peak: peakResidentMegabytes())
                return
            }
            let context = try Context()
            let suite = try Suite(context: context)
            defer { suite.close() }
            try await suite.store(photos)
            for _ in 0..<roundCount {
                var round: [Result] = []
                for workers in [1, 2] { round.append(try thumbnailer(photos, workers: workers, sizes: sizes, quality: quality)) }
                peak = peakResidentMegabytes()
                for workers in [1, 2] {
                    round.append(try external("C loop (libjpeg-turbo)", workers, cLoop, ["\(workers)"] + common))
                }
                round.append(try areaAverageLoop(cLoop, common))
                round.append(try external("Pillow (draft)", 2, python, ["ops/thumbs/thumbs_pillow.py", "2"] + common))
                // Pillow given the Thumbnailer's shortcut too: the smaller sizes from the larger.
                round.append(try external(
                    "Pillow (draft, each size from the one before)", 2, python, ["ops/thumbs/thumbs_pillow.py", "--cascade", "2"] + common))
                for workers in [1, 2] {
                    try await suite.startWorker(workers: workers, context: context)
                    let (seconds, images, bytes) = try await suite.batch(sizes: sizes)
                    round.append(Result(name: "end to end: thumbnail-worker through the queue", workers: workers, images: images, seconds: seconds, bytes: bytes))
                }
                suite.stopWorker()
                rounds.append(round)
            }
            let results = rounds[0].indices.map { column in
                rounds.map { $0[column] }.sorted { $0.perSecond < $1.perSecond }[roundCount / 2]
            }
            report(results, peak: peak)
            let large = try FileManager.default.contentsOfDirectory(atPath: progressive).filter { $0.hasSuffix(".jpg") }.sorted()
                .map { [UInt8](try Data(contentsOf: URL(fileURLWithPath: "\(progressive)/\($0)"))) }
            let workerPeak = try await progressivePeak(large, sizes: sizes, context: context)
            print(String(
                format: "Peak RSS of thumbnail-worker over %d progressive 18-megapixel JPEGs (5196×3464): %.0f MB with one job at a time, %.0f MB with two",
                large.count, workerPeak.one, workerPeak.two))
            try formats(
                binary: prepared[4], pngFolder: prepared[5], heicFolder: prepared[6], alphaFolder: prepared[7], sizes: sizes, sizesText: sizesText,
                quality: quality, roundCount: roundCount)
        } catch {
            FileHandle.standardError.write(Data("thumbs benchmark failed: \(error)\n".utf8))
            exit(1)
        }
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// The Thumbnailer on `workers` threads, photo i on thread i % workers.
    static func thumbnailer(_ photos: [[UInt8]], workers: Int, sizes: [Int], quality: Int) throws -> Result {
        let thumbnailer = Thumbnailer(quality: quality), targets = sizes.map { Thumbnailer.Target(longestEdge: $0) }
        let totals = Locked((bytes: 0, failure: String?.none))
        let start = monotonicSeconds()
        DispatchQueue.concurrentPerform(iterations: workers) { worker in
            var bytes = 0
            do {
                for index in stride(from: worker, to: photos.count, by: workers) {
                    bytes += try thumbnailer.thumbnails(of: photos[index], sizes: targets).reduce(0) { $0 + $1.data.count }
                }
            } catch {
                totals.withLock { $0.failure = "\(error)" }
            }
            totals.withLock { $0.bytes += bytes }
        }
        let seconds = monotonicSeconds() - start
        let (bytes, failure) = totals.withLock { $0 }
        if let failure { throw Failure(failure) }
        return Result(name: "Thumbnailer (Swift, in process)", workers: workers, images: photos.count, seconds: seconds, bytes: bytes)
    }

    /// A baseline process, which prints "images N seconds S bytes B".
    static func external(
        _ name: String, _ workers: Int, _ executable: String, _ arguments: [String], environment: [String: String] = [:]
    ) throws -> Result {
        let words = try output(of: executable, arguments, environment: environment).last?.split(separator: " ").map(String.init) ?? []
        guard words.count == 6, let images = Int(words[1]), let seconds = Double(words[3]), let bytes = Int(words[5]) else {
            throw Failure("\(name) printed \(words)")
        }
        return Result(name: name, workers: workers, images: images, seconds: seconds, bytes: bytes)
    }

    /// The C loop doing the work of the pipeline before the sharper thumbnails (area average,
    /// one baseline encode at the quality asked for), one worker: what they cost.
    static func areaAverageLoop(_ cLoop: String, _ common: [String]) throws -> Result {
        try external("Area-average C loop (the pipeline before 2026-12-07)", 1, cLoop, ["1"] + common, environment: ["THUMBS_AREA": "1"])
    }

    /// The lines `executable` prints; it must exit 0.
    static func output(of executable: String, _ arguments: [String], environment: [String: String] = [:]) throws -> [String] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        // A baseline that hangs (a Pillow pool whose worker died once did) ends the run, loudly.
        let watchdog = DispatchWorkItem { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(900), execute: watchdog)
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        watchdog.cancel()
        guard process.terminationStatus == 0 else {
            throw Failure("\(executable) exited with \(process.terminationStatus) (killed after 900 s when 9)")
        }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    /// VmHWM of /proc/self/status, in MB.
    static func peakResidentMegabytes() -> Double {
        Double(ProcessMemory.current().peakResidentBytes) / 1_048_576
    }

    static func report(_ results: [Result], peak: Double) {
        // The faster Pillow row of the run is the one compared against.
        let c = results.filter { $0.name.hasPrefix("C loop") }
        let pillow = results.filter { $0.name.hasPrefix("Pillow") }.max { $0.perSecond < $1.perSecond }
        print("""

            | contender | workers | images/s | output MB | vs C loop, same workers | vs the faster Pillow (2) | 2 workers vs 1 |
            |---|---|---|---|---|---|---|
            """)
        for result in results {
            let baseline = c.first { $0.workers == result.workers }
            let single = results.first { $0.name == result.name && $0.workers == 1 }
            let scaling = result.workers == 2 && single != nil ? String(format: "%.2f×", result.perSecond / single!.perSecond) : "–"
            print(String(
                format: "| %@ | %d | %.2f | %.1f | %@ | %@ | %@ |", result.name, result.workers, result.perSecond,
                Double(result.bytes) / 1e6, baseline.map { String(format: "%.2f", result.perSecond / $0.perSecond) } ?? "–",
                pillow.map { String(format: "%.2f", result.perSecond / $0.perSecond) } ?? "–", scaling))
        }
        print(String(format: "\nPeak RSS of this process after the Thumbnailer runs (corpus in memory included): %.0f MB", peak))
    }
}
