import ClaimReport
import Clients
import Foundation
import Harness
import JPEG
import Proto
import RPC
import Runtime

/// `ops/bench report`: a claim PDF of --items items with --photos photos each, written by the
/// `homepwner` executable against the suite in this process, against just fetching the
/// thumbnails it embeds (GetRendition, as many in flight as the report asks for), rounds
/// alternated; and the report process's peak RSS.
enum ReportBenchmark {
    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    static func run(_ arguments: [String]) async {
        func option(_ name: String, _ fallback: Int) -> Int {
            guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count, let value = Int(arguments[index + 1])
            else { return fallback }
            return value
        }
        let itemCount = option("--items", 10_000)
        let photosPerItem = option("--photos", 2)
        let rounds = option("--rounds", 3)
        let format = arguments.firstIndex(of: "--format").flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil } ?? "pdf"
        let bin = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path
        let homepwner = bin + "/homepwner"
        guard FileManager.default.isExecutableFile(atPath: homepwner) else {
            FileHandle.standardError.write(Data("report benchmark: \(homepwner) is missing; ops/bench report builds it\n".utf8))
            exit(1)
        }
        do {
            let harness = try Harness(logger: Logger(label: "bench", level: .error))
            defer { harness.shutdown() }
            try harness.start()
            let clients = try harness.clients()
            defer { clients.close() }
            print("storing \(itemCount) items with \(photosPerItem) photos each…")
            let keys = try await fill(clients, items: itemCount, photos: photosPerItem)
            // Every thumbnail made once, before anything is timed: the report embeds stored ones.
            _ = try await fetchThumbnails(clients, keys: keys)
            let output = FileManager.default.temporaryDirectory.appendingPathComponent("hp-bench-report-\(UUID().uuidString.prefix(8))").path
            try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: output) }
            var fetches: [Double] = [], reports: [Double] = [], peaks: [Double] = []
            var size = 0
            for round in 0..<rounds {
                let started = Date()
                _ = try await fetchThumbnails(clients, keys: keys)
                fetches.append(Date().timeIntervalSince(started))
                let pdf = output + "/claim-\(round).\(format)"
                let (seconds, peak) = try report(
                    homepwner, ["report", "claim", "--format", format, "-o", pdf, "--item", harness.endpoints.itemRPC,
                                "--image", harness.endpoints.imageRPC, "--timeout", "60000"])
                reports.append(seconds)
                peaks.append(peak)
                size = (try? FileManager.default.attributesOfItem(atPath: pdf)[.size] as? Int) ?? 0
                if format == "html" { size = 0 }
                try? FileManager.default.removeItem(atPath: pdf)
                print(String(format: "round %d: fetch %.1f s, report %.1f s (%.2f×), peak RSS %.0f MB", round + 1, fetches.last!, seconds, seconds / fetches.last!, peak))
            }
            let ratios = zip(reports, fetches).map { $0 / $1 }.sorted()
            print("""

                | what | items | photos | median s | ratio to fetching (median, min–max) | peak RSS MB (max) | PDF MB |
                |---|---|---|---|---|---|---|
                """)
            print(String(
                format: "| GetRendition of every photo, %d in flight | %d | %d | %.1f | 1.00 | – | – |", ClaimGathererConcurrency.photos,
                itemCount, keys.count, fetches.sorted()[fetches.count / 2]))
            print(String(
                format: "| homepwner report claim --format %@ | %d | %d | %.1f | %.2f (%.2f–%.2f) | %.0f | %.0f |", format, itemCount, keys.count,
                reports.sorted()[reports.count / 2], ratios[ratios.count / 2], ratios.first!, ratios.last!, peaks.max()!,
                Double(size) / 1_048_576))
        } catch {
            FileHandle.standardError.write(Data("report benchmark failed: \(error)\n".utf8))
            exit(1)
        }
    }

    /// The baseline's calls in flight (the report asks with up to
    /// `ClaimGatherer.defaultPhotoConcurrency`), and the thumbnails' size, the report's.
    enum ClaimGathererConcurrency {
        static let photos = 4
        static let edge = ClaimGatherer.defaultThumbnailEdge
    }

    /// Items in ten rooms, each with `photos` distinct JPEGs (of 480×360, about 20 KB).
    static func fill(_ clients: HomepwnerClients, items: Int, photos: Int) async throws -> [String] {
        let items = items, photosPerItem = photos
        let jpegs = try (0..<photos).map { index in try photo(seed: UInt64(index + 1)) }
        var rooms: [String] = []
        var home = CreateLocationRequest()
        home.name = "Home"
        home.kind = .home
        let homeKey = try await clients.items.call(ItemServiceRPC.createLocation, home).key
        for index in 0..<10 {
            var room = CreateLocationRequest()
            room.name = "Room \(index)"
            room.parentKey = homeKey
            rooms.append(try await clients.items.call(ItemServiceRPC.createLocation, room).key)
        }
        let roomKeys = rooms
        var keys: [String] = []
        // 16 items at once: creates and puts arriving together share commits.
        for start in stride(from: 0, to: items, by: 16) {
            let chunk = try await withThrowingTaskGroup(of: [String].self) { group in
                for index in start..<min(items, start + 16) {
                    group.addTask {
                        var create = CreateItemRequest()
                        create.name = "Item \(index) — Crème brûlée torch"
                        create.serialNumber = "SN-\(index)"
                        create.brand = "Iwatani"
                        create.locationKey = roomKeys[index % roomKeys.count]
                        create.purchaseDate = "2021-03-14"
                        create.replacementValue = Money(currency: "", minorUnits: 5_999)
                        let item = try await clients.items.call(ItemServiceRPC.createItem, create)
                        var attached: [String] = []
                        for jpeg in jpegs.prefix(photosPerItem) {
                            var put = PutImageRequest()
                            put.data = jpeg
                            put.ownerKey = item.key
                            let info = try await clients.images.call(ImageServiceRPC.putImage, put)
                            var attach = AttachPhotoRequest()
                            attach.itemKey = item.key
                            attach.imageKey = info.key
                            _ = try await clients.items.call(ItemServiceRPC.attachPhoto, attach)
                            attached.append(info.key)
                        }
                        return attached
                    }
                }
                return try await group.reduce(into: [String]()) { $0 += $1 }
            }
            keys += chunk
            if start % 1000 == 0 && start > 0 { print("  \(start) items") }
        }
        return keys
    }

    /// GetRendition of every key, `ClaimGathererConcurrency.photos` in flight; returns the bytes.
    static func fetchThumbnails(_ clients: HomepwnerClients, keys: [String]) async throws -> Int {
        try await withThrowingTaskGroup(of: Int.self) { group in
            var next = 0, bytes = 0
            func start() {
                guard next < keys.count else { return }
                let key = keys[next]
                next += 1
                group.addTask {
                    var request = GetRenditionRequest()
                    request.key = key
                    request.width = ClaimGathererConcurrency.edge
                    request.height = ClaimGathererConcurrency.edge
                    request.mode = .fit
                    return try await clients.images.call(ImageServiceRPC.getRendition, request).data.count
                }
            }
            for _ in 0..<ClaimGathererConcurrency.photos { start() }
            while let count = try await group.next() {
                bytes += count
                start()
            }
            return bytes
        }
    }

    /// Runs the report; its wall time and its peak RSS in MB (VmHWM, read every 20 ms while it
    /// runs: getrusage's children figure would count this process's pages the child had
    /// between fork and exec).
    static func report(_ executable: String, _ arguments: [String]) throws -> (Double, Double) {
        let process = Process()
        // HOMEPWNER_BENCH_WRAP=heaptrack (say) runs the report under it, to see where memory goes.
        if let wrapper = ProcessInfo.processInfo.environment["HOMEPWNER_BENCH_WRAP"], !wrapper.isEmpty {
            process.executableURL = URL(fileURLWithPath: wrapper)
            process.arguments = [executable] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
        }
        process.standardOutput = FileHandle.nullDevice
        let started = Date()
        try process.run()
        var peakKilobytes = 0
        while process.isRunning {
            if let status = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8),
                let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
                let kilobytes = Int(line.split(separator: " ").dropFirst().first ?? "")
            {
                peakKilobytes = max(peakKilobytes, kilobytes)
            }
            usleep(20_000)
        }
        process.waitUntilExit()
        let seconds = Date().timeIntervalSince(started)
        guard process.terminationStatus == 0 else { throw Failure("homepwner report exited \(process.terminationStatus)") }
        return (seconds, Double(peakKilobytes) / 1024)
    }

    /// A 480×360 photo-like JPEG (smooth gradients, some noise), distinct per seed.
    static func photo(seed: UInt64) throws -> [UInt8] {
        var state = seed &* 0x9E37_79B9_7F4A_7C15
        let (width, height) = (480, 360)
        var pixels = [UInt8](repeating: 0, count: width * height * 3)
        for y in 0..<height {
            for x in 0..<width {
                state ^= state << 13; state ^= state >> 7; state ^= state << 17
                let noise = Int(state & 15)
                let at = (y * width + x) * 3
                pixels[at] = UInt8(truncatingIfNeeded: (x * 255 / width + noise + Int(seed) * 40) & 255)
                pixels[at + 1] = UInt8(truncatingIfNeeded: y * 255 / height + noise)
                pixels[at + 2] = UInt8(truncatingIfNeeded: ((x + y) * 127 / (width + height)) + noise)
            }
        }
        return try JPEG.encode(RGBImage(width: width, height: height, pixels: pixels), quality: 85)
    }
}
