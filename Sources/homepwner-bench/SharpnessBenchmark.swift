import Foundation
import ImageQuality
import JPEG
import Locking

/// `homepwner-bench sharpness`: how close the `Thumbnailer`'s thumbnails are to what a
/// photographer would make by hand, per size, on real photos.
///
/// For every JPEG of the corpus (the repository's test photos under Tests/Fixtures that decode,
/// and the 171 wallpapers `ops/thumbs/prepare` fetches) the Thumbnailer makes FIT `--sizes`
/// (default 64,256,1024) at `--quality` (default 80) from one decode, as the worker does; each
/// thumbnail is decoded and compared with its reference: the upright original decoded at full
/// size and resized to the thumbnail's exact size with `LanczosReference` (Lanczos-3 in gamma
/// space, as Pillow's LANCZOS). The score is `SSIM.luma` (BT.601 Y, 11×11 Gaussian window of
/// σ 1.5, K1 0.01, K2 0.03, L 255). Prints per size the count, min, 5th percentile, median and
/// total bytes, and the worst files. `--repository-only` skips the wallpapers; `--save DIR` with
/// `--only TEXT` writes, for the files whose path contains TEXT, each thumbnail (`.jpg`) and its
/// reference (`.ppm`) for a cross-check against scikit-image and Pillow (ops/thumbs/crosscheck.py).
enum SharpnessBenchmark {
    /// One thumbnail's score.
    struct Score: Sendable {
        let file: String
        let size: Int
        let width: Int
        let height: Int
        let ssim: Double
        let bytes: Int
        let quality: Int
    }

    static func run(_ arguments: [String]) async {
        func option(_ name: String, _ fallback: String) -> String {
            arguments.firstIndex(of: name).flatMap { arguments.indices.contains($0 + 1) ? arguments[$0 + 1] : nil } ?? fallback
        }
        let sizes = option("--sizes", "64,256,1024").split(separator: ",").compactMap { Int($0) }
        let quality = Int(option("--quality", "80")) ?? 80
        let save = arguments.contains("--save") ? option("--save", "") : nil
        let only = option("--only", "")
        do {
            var files = try fixturePhotos()
            if !arguments.contains("--repository-only") {
                let prepared = try ThumbsBenchmark.output(of: "ops/thumbs/prepare", [])
                guard prepared.count == 8 else { throw ThumbsBenchmark.Failure("ops/thumbs/prepare printed \(prepared)") }
                files += try FileManager.default.subpathsOfDirectory(atPath: prepared[0])
                    .filter { $0.lowercased().hasSuffix(".jpg") }.sorted().map { "\(prepared[0])/\($0)" }
            }
            if !only.isEmpty { files = files.filter { $0.contains(only) } }
            if let save { try FileManager.default.createDirectory(atPath: save, withIntermediateDirectories: true) }
            let start = Date()
            let scores = try score(files, sizes: sizes, quality: quality, save: save)
            print("""
                \(files.count) JPEGs (Tests/Fixtures\(arguments.contains("--repository-only") ? "" : " and the wallpapers")), \
                FIT \(sizes.map(String.init).joined(separator: ",")) at quality \(quality); \
                SSIM of luma against a Lanczos-3 resize of the full-size upright original; \
                \(String(format: "%.0f", Date().timeIntervalSince(start))) s

                | size | thumbnails | min SSIM | p5 | median | below 0.95 | bytes |
                |---|---|---|---|---|---|---|
                """)
            for size in sizes {
                let ssims = scores.filter { $0.size == size }.map(\.ssim).sorted()
                guard !ssims.isEmpty else { continue }
                let bytes = scores.filter { $0.size == size }.reduce(0) { $0 + $1.bytes }
                print(String(
                    format: "| %d | %d | %.4f | %.4f | %.4f | %d | %d |", size, ssims.count, ssims[0],
                    ssims[Int(Double(ssims.count - 1) * 0.05)], median(ssims), ssims.filter { $0 < 0.95 }.count, bytes))
            }
            print("\nQualities encoded at (the ladder):\n")
            for size in sizes {
                let counts = Dictionary(grouping: scores.filter { $0.size == size }, by: \.quality).mapValues(\.count).sorted { $0.key < $1.key }
                print("- \(size): " + counts.map { "q\($0.key) ×\($0.value)" }.joined(separator: ", "))
            }
            let all = scores.map(\.ssim).sorted()
            print(String(format: "\nAll sizes: min %.4f, median %.4f, %d of %d below 0.95", all.first ?? 0, median(all), all.filter { $0 < 0.95 }.count, all.count))
            if !only.isEmpty {
                print("\nEach thumbnail:\n")
                for score in scores.sorted(by: { ($0.file, $0.size) < ($1.file, $1.size) }) {
                    print(String(format: "- %.6f  %@ at %d (%d×%d)", score.ssim, score.file, score.size, score.width, score.height))
                }
            }
            print("\nWorst 5:\n")
            for score in scores.sorted(by: { $0.ssim < $1.ssim }).prefix(5) {
                print(String(format: "- %.4f  %@ at %d (%d×%d)", score.ssim, shortName(score.file), score.size, score.width, score.height))
            }
        } catch {
            FileHandle.standardError.write(Data("sharpness benchmark failed: \(error)\n".utf8))
            exit(1)
        }
    }

    /// The JPEGs under Tests/Fixtures that decode (the refused ones, cut off or damaged on
    /// purpose, are left out).
    static func fixturePhotos() throws -> [String] {
        let folder = "Tests/Fixtures"
        return try FileManager.default.subpathsOfDirectory(atPath: folder).filter { $0.lowercased().hasSuffix(".jpg") }.sorted()
            .map { "\(folder)/\($0)" }
            .filter { path in (try? JPEG.decode([UInt8](Data(contentsOf: URL(fileURLWithPath: path))))) != nil }
    }

    /// Every file's thumbnails scored, on two threads.
    static func score(_ files: [String], sizes: [Int], quality: Int, save: String?) throws -> [Score] {
        let thumbnailer = Thumbnailer(quality: quality), targets = sizes.map { Thumbnailer.Target(longestEdge: $0) }
        let results = Locked((scores: [Score](), failure: String?.none))
        let workers = 2
        DispatchQueue.concurrentPerform(iterations: workers) { worker in
            for index in stride(from: worker, to: files.count, by: workers) {
                do {
                    let photo = [UInt8](try Data(contentsOf: URL(fileURLWithPath: files[index])))
                    let header = try JPEG.header(of: photo)
                    let upright = try JPEG.decode(photo).oriented((1...8).contains(header.orientation) ? header.orientation : 1)
                    var scores: [Score] = []
                    for (size, output) in zip(sizes, try thumbnailer.thumbnails(of: photo, sizes: targets)) {
                        let thumbnail = try JPEG.decode(output.data)
                        let reference = LanczosReference.resized(upright, width: output.width, height: output.height)
                        scores.append(Score(
                            file: files[index], size: size, width: output.width, height: output.height,
                            ssim: SSIM.luma(thumbnail, reference), bytes: output.data.count, quality: output.quality))
                        if let save {
                            let stem = "\(save)/\(URL(fileURLWithPath: files[index]).deletingPathExtension().lastPathComponent)-\(size)"
                            try Data(output.data).write(to: URL(fileURLWithPath: "\(stem).jpg"))
                            try Data(ppm(reference)).write(to: URL(fileURLWithPath: "\(stem)-reference.ppm"))
                        }
                    }
                    results.withLock { $0.scores += scores }
                } catch {
                    results.withLock { $0.failure = "\(files[index]): \(error)" }
                }
            }
        }
        let (scores, failure) = results.withLock { $0 }
        if let failure { throw ThumbsBenchmark.Failure(failure) }
        return scores
    }

    /// A binary PPM (P6) of `image`.
    static func ppm(_ image: RGBImage) -> [UInt8] {
        Array("P6\n\(image.width) \(image.height)\n255\n".utf8) + image.pixels
    }

    static func median(_ sorted: [Double]) -> Double {
        guard !sorted.isEmpty else { return 0 }
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    /// The last two components of a path: the wallpaper's folder or the fixture folder, and the file.
    static func shortName(_ path: String) -> String {
        let parts = path.split(separator: "/")
        return parts.suffix(path.contains("/wallpapers/") ? 4 : 2).joined(separator: "/")
    }
}
