import Clients
import Foundation
import Harness
import JPEG
import Proto
import RPC
import Runtime

/// `ops/bench backup`: `homepwner backup` of --gb GB of photos (distinct JPEGs of about 4 MB,
/// one item per 5) against the suite in this process, next to `tar` of the same data folders
/// (then `sync` of the tar file: the backup is durable, so is the baseline), rounds
/// alternated, each into a fresh folder on the same disk; then an incremental backup after 1%
/// new photos, against the full one's median; then `homepwner backup verify` against
/// `sha256sum` of the same files, rounds alternated.
enum BackupBenchmark {
    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    static func run(_ arguments: [String]) async {
        func option(_ name: String, _ fallback: Double) -> Double {
            guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count, let value = Double(arguments[index + 1])
            else { return fallback }
            return value
        }
        let gigabytes = option("--gb", 2)
        let rounds = Int(option("--rounds", 3))
        let bin = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path
        let homepwner = bin + "/homepwner"
        guard FileManager.default.isExecutableFile(atPath: homepwner) else {
            FileHandle.standardError.write(Data("backup benchmark: \(homepwner) is missing; ops/bench backup builds it\n".utf8))
            exit(1)
        }
        do {
            let harness = try Harness(logger: Logger(label: "bench", level: .error))
            defer { harness.shutdown() }
            try harness.start(.imageService)
            try harness.start(.itemService)
            let clients = try harness.clients()
            defer { clients.close() }
            let bases = try (0..<4).map { try photo(seed: UInt64($0 + 1)) }
            let each = bases.map(\.count).reduce(0, +) / bases.count
            let count = Int(gigabytes * 1_073_741_824) / each + 1
            print(String(format: "storing %d photos of about %.1f MB (%.2f GB)…", count, Double(each) / 1_048_576, Double(count * each) / 1_073_741_824))
            var stored = 0
            try await put(clients, bases, from: 0, count: count) { stored = $0 }
            let output = harness.dataDirectory + "/../bench-backup"
            try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
            // The puts' dirty pages written back before anything is timed.
            _ = try time("/bin/sync", [])
            let endpoints = ["--item", harness.endpoints.itemRPC, "--image", harness.endpoints.imageRPC, "--timeout", "60000", "--no-progress"]

            var tars: [Double] = [], fulls: [Double] = []
            for round in 0..<rounds {
                let tarFile = output + "/data.tar"
                let tar = try time("/usr/bin/env", ["sh", "-c", "tar -cf \"$1\" -C \"$2\" items images && sync \"$1\"", "tar", tarFile, harness.dataDirectory])
                try FileManager.default.removeItem(atPath: tarFile)
                let folder = output + "/full-\(round)"
                let full = try time(homepwner, ["backup", folder] + endpoints)
                if round < rounds - 1 { try FileManager.default.removeItem(atPath: folder) }
                tars.append(tar)
                fulls.append(full)
                print(String(format: "round %d: tar %.1f s, backup %.1f s (%.2f× tar's speed)", round + 1, tar, full, tar / full))
            }
            let folder = output + "/full-\(rounds - 1)"
            // 1% new photos, then the incremental backup into the last full one's folder.
            try await put(clients, bases, from: count, count: max(1, count / 100)) { stored = $0 }
            try await Task.sleep(for: .milliseconds(1100))  // snapshots are named by the second
            let incremental = try time(homepwner, ["backup", folder] + endpoints)
            print(String(format: "incremental (%d new photos): %.2f s", max(1, count / 100), incremental))

            // verify vs sha256sum over the same files: the newest snapshot's and every blob.
            let snapshot = try FileManager.default.contentsOfDirectory(atPath: folder + "/snapshots").sorted().last!
            let list = output + "/files"
            let files = [folder + "/snapshots/\(snapshot)/items.db", folder + "/snapshots/\(snapshot)/images.db"]
                + (FileManager.default.enumerator(atPath: folder + "/blobs")?.allObjects as? [String] ?? [])
                .filter { $0.count > 64 }.map { folder + "/blobs/" + $0 }
            try Data(files.joined(separator: "\n").utf8).write(to: URL(fileURLWithPath: list))
            var sums: [Double] = [], verifies: [Double] = []
            for round in 0..<rounds {
                let sum = try time("/usr/bin/env", ["sh", "-c", "xargs -a \"$1\" -d '\\n' sha256sum > /dev/null", "sum", list])
                let verify = try time(homepwner, ["backup", "verify", folder])
                sums.append(sum)
                verifies.append(verify)
                print(String(format: "round %d: sha256sum %.1f s, verify %.1f s (%.2f× sha256sum's speed)", round + 1, sum, verify, sum / verify))
            }
            try? FileManager.default.removeItem(atPath: output)

            let bytes = Double(stored * each) / 1_073_741_824
            let backupRatios = zip(tars, fulls).map { $0 / $1 }.sorted()
            let verifyRatios = zip(sums, verifies).map { $0 / $1 }.sorted()
            let fullMedian = median(fulls)
            print("""

                | what | photos | GB | median s | speed ratio to the baseline (median, min–max) |
                |---|---|---|---|---|
                """)
            print(String(format: "| tar -cf of the data folders, then sync | %d | %.2f | %.1f | 1.00 |", count, bytes, median(tars)))
            print(String(
                format: "| homepwner backup (full, into an empty folder) | %d | %.2f | %.1f | %.2f (%.2f–%.2f) |", count, bytes, fullMedian,
                backupRatios[backupRatios.count / 2], backupRatios.first!, backupRatios.last!))
            print(String(
                format: "| homepwner backup (incremental, after 1%% new photos) | %d new | – | %.2f | %.1f%% of the full backup's time |",
                max(1, count / 100), incremental, incremental / fullMedian * 100))
            print(String(format: "| sha256sum of the backup's files | %d | %.2f | %.1f | 1.00 |", files.count, bytes, median(sums)))
            print(String(
                format: "| homepwner backup verify | %d | %.2f | %.1f | %.2f (%.2f–%.2f) |", files.count, bytes, median(verifies),
                verifyRatios[verifyRatios.count / 2], verifyRatios.first!, verifyRatios.last!))
        } catch {
            FileHandle.standardError.write(Data("backup benchmark failed: \(error)\n".utf8))
            exit(1)
        }
    }

    static func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

    /// Stores `count` distinct photos (a base JPEG with a numbered comment segment after its
    /// SOI), five to an item, 4 at a time.
    static func put(
        _ clients: HomepwnerClients, _ bases: [[UInt8]], from first: Int, count: Int, progress: @escaping (Int) -> Void
    ) async throws {
        for start in stride(from: first, to: first + count, by: 20) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in start..<min(first + count, start + 20) where index % 5 == 0 {
                    group.addTask {
                        var create = CreateItemRequest()
                        create.name = "Item \(index / 5)"
                        let item = try await clients.items.call(ItemServiceRPC.createItem, create)
                        for photo in index..<min(first + count, index + 5) {
                            var put = PutImageRequest()
                            put.data = distinct(bases[photo % bases.count], photo)
                            put.ownerKey = item.key
                            let info = try await clients.images.call(ImageServiceRPC.putImage, put, options: .init(timeoutMilliseconds: 60_000))
                            var attach = AttachPhotoRequest()
                            attach.itemKey = item.key
                            attach.imageKey = info.key
                            _ = try await clients.items.call(ItemServiceRPC.attachPhoto, attach)
                        }
                    }
                }
                try await group.waitForAll()
            }
            progress(min(first + count, start + 20))
            if (start - first) % 100 == 0 && start > first { print("  \(start - first) photos") }
        }
    }

    /// `base` with a COM segment naming `index` after its SOI: a valid JPEG, distinct bytes.
    static func distinct(_ base: [UInt8], _ index: Int) -> [UInt8] {
        let text = Array("homepwner bench photo \(index)".utf8)
        let length = text.count + 2
        return Array(base[0..<2]) + [0xFF, 0xFE, UInt8(length >> 8), UInt8(length & 0xFF)] + text + Array(base[2...])
    }

    /// A 2400×1800 photo-like JPEG at quality 95 with fine noise (about 4 MB), distinct per seed.
    static func photo(seed: UInt64) throws -> [UInt8] {
        var state = seed &* 0x9E37_79B9_7F4A_7C15
        let (width, height) = (2400, 1800)
        var pixels = [UInt8](repeating: 0, count: width * height * 3)
        for y in 0..<height {
            for x in 0..<width {
                state ^= state << 13; state ^= state >> 7; state ^= state << 17
                let at = (y * width + x) * 3
                pixels[at] = UInt8(truncatingIfNeeded: (x * 255 / width + Int(state & 63) + Int(seed) * 40) & 255)
                pixels[at + 1] = UInt8(truncatingIfNeeded: y * 255 / height + Int((state >> 8) & 63))
                pixels[at + 2] = UInt8(truncatingIfNeeded: ((x + y) * 127 / (width + height)) + Int((state >> 16) & 63))
            }
        }
        return try JPEG.encode(RGBImage(width: width, height: height, pixels: pixels), quality: 95)
    }

    /// Runs a process to its end; its wall time. Fails naming it when it exits non-zero.
    static func time(_ executable: String, _ arguments: [String]) throws -> Double {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        let started = Date()
        try process.run()
        let text = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let seconds = Date().timeIntervalSince(started)
        guard process.terminationStatus == 0 else {
            throw Failure("\(arguments.prefix(2).joined(separator: " ")) exited \(process.terminationStatus): \(String(decoding: text, as: UTF8.self))")
        }
        return seconds
    }
}
