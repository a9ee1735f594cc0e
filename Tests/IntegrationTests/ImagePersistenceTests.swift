import Digest
import Foundation
import ImageService
import Proto
import RPC
import Locking
import Testing
import RPCTestSupport

/// Acknowledged puts and upload chunks survive a SIGKILL of the real image-service executable,
/// and nothing a killed put or upload left behind becomes visible.
@Suite struct ImagePersistenceTests {
    /// What the writers and the killer share.
    final class Shared: Sendable {
        let acknowledged = Locked<[ImageInfo]>([])
        let killed = Locked(false)
    }

    static func launch(_ data: String) throws -> ExecutableTests.Launched {
        try ExecutableTests.launch("image-service", [
            "--rpc", "ipc://\(data)/rpc.sock", "--events", "ipc://\(data)/events.sock", "--data-dir", data,
            "--cache-bytes", "1048576",
        ], endpoint: "ipc://\(data)/rpc.sock")
    }

    /// Patient options: the executable may still be starting.
    static let patient = CallOptions(timeoutMilliseconds: 20_000, retry: RetryPolicy(maxAttempts: 40, initialBackoffMilliseconds: 100))

    static func blob(_ size: Int, seed: Int) -> [UInt8] {
        var data: [UInt8] = [0, 0, 0, 16] + Array("ftypisom".utf8) + [0, 0, 0, 0]
        data += (0..<size).map { UInt8(truncatingIfNeeded: ($0 &* 131) ^ seed) }
        return data
    }

    @Test func acknowledgedPutsAndUploadChunksSurviveSIGKILLAndNothingPartialAppears() async throws {
        let data = try ExecutableTests.folder()
        defer { try? FileManager.default.removeItem(atPath: data) }
        let first = try Self.launch(data)
        defer { if first.process.isRunning { first.process.terminate() } }
        let client = try RPCClient(context: ExecutableTests.context, endpoint: first.endpoint)
        defer { client.close() }
        _ = try await client.call(HealthRPC.check, HealthCheckRequest(), options: Self.patient)

        // An upload left half done when the process dies.
        var begin = BeginUploadRequest()
        begin.totalSize = 100_000
        let upload = try await client.call(ImageServiceRPC.beginUpload, begin, options: Self.patient)
        var append = AppendUploadRequest()
        append.uploadId = upload.uploadId
        append.data = Array(Self.blob(100_000, seed: 1).prefix(50_000))
        _ = try await client.call(ImageServiceRPC.appendUpload, append, options: Self.patient)

        // Two writers put until the kill; every acknowledged put is recorded.
        let shared = Shared()
        await withTaskGroup(of: Void.self) { group in
            for writer in 0..<2 {
                group.addTask {
                    var seed = writer * 1000
                    while !shared.killed.withLock({ $0 }) {
                        seed += 1
                        var put = PutImageRequest()
                        put.data = Self.blob(50_000 + (seed % 7) * 70_000, seed: seed)
                        put.ownerKey = "writer-\(writer)"
                        do {
                            let info = try await client.call(
                                ImageServiceRPC.putImage, put, options: .init(timeoutMilliseconds: 3000, retry: .none))
                            shared.acknowledged.withLock { $0.append(info) }
                        } catch {
                            // Gone after the kill; before it, a put that timed out on a busy
                            // machine is simply not acknowledged.
                            if shared.killed.withLock({ $0 }) { break }
                        }
                    }
                }
            }
            group.addTask {
                // Twelve acknowledged puts, or a minute on a machine too busy for them.
                let end = ContinuousClock.now + .seconds(60)
                while shared.acknowledged.withLock({ $0.count }) < 12 && ContinuousClock.now < end {
                    try? await Task.sleep(for: .milliseconds(5))
                }
                shared.killed.withLock { $0 = true }
                kill(first.process.processIdentifier, SIGKILL)
            }
        }
        #expect(shared.acknowledged.withLock { $0.count } >= 12, "too few puts acknowledged before the kill")
        #expect(await ExecutableTests.waitForExit(first.process, seconds: 10))
        #expect(first.process.terminationReason == .uncaughtSignal)
        let before = shared.acknowledged.withLock { $0 }

        let second = try Self.launch(data)
        defer { if second.process.isRunning { second.process.terminate() } }
        var list = ListImagesRequest()
        list.pageSize = 1000
        let images = try await client.call(ImageServiceRPC.listImages, list, options: Self.patient).images
        let listed = Dictionary(uniqueKeysWithValues: images.map { ($0.key, $0) })
        for info in before {
            #expect(listed[info.key] == info, "acknowledged \(info.key) lost or changed")
        }
        // Whatever is visible (acknowledged, or completed just before the kill) is whole.
        for info in images {
            var get = GetImageRequest()
            get.key = info.key
            let reply = try await client.call(ImageServiceRPC.getImage, get, options: Self.patient)
            #expect(SHA256.checksum(reply.data) == info.checksum)
        }
        #expect(images.count <= before.count + 2)
        // The upload's acknowledged half survived the kill: resumed, finished and committed.
        var resume = BeginUploadRequest()
        resume.resumeUploadId = upload.uploadId
        let resumed = try await client.call(ImageServiceRPC.beginUpload, resume, options: Self.patient)
        #expect(resumed.uploadId == upload.uploadId && resumed.receivedBytes == 50_000)
        let whole = Array(Self.blob(100_000, seed: 1).prefix(100_000))
        var rest = append
        rest.offset = 50_000
        rest.data = Array(whole[50_000...])
        #expect(try await client.call(ImageServiceRPC.appendUpload, rest, options: Self.patient).receivedBytes == 100_000)
        var commit = CommitUploadRequest()
        commit.uploadId = upload.uploadId
        let committed = try await client.call(ImageServiceRPC.commitUpload, commit, options: Self.patient)
        #expect(committed.checksum == SHA256.checksum(whole))
        var get = GetImageRequest()
        get.key = committed.key
        #expect(SHA256.checksum(try await client.call(ImageServiceRPC.getImage, get, options: Self.patient).data) == SHA256.checksum(whole))
        #expect(try FileManager.default.contentsOfDirectory(atPath: data + "/images/uploads").isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: data + "/images/tmp").isEmpty)
        kill(second.process.processIdentifier, SIGTERM)
        #expect(await ExecutableTests.waitForExit(second.process, seconds: 10))
    }

    /// VmRSS of a process, from /proc.
    static func residentBytes(_ pid: Int32) -> Int {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kb = Int(line.split(separator: " ").dropFirst().first ?? "")
        else { return 0 }
        return kb * 1024
    }

    @Test func purgeCacheGivesTheMemoryBackSoTheServiceRSSFalls() async throws {
        let data = try ExecutableTests.folder()
        defer { try? FileManager.default.removeItem(atPath: data) }
        let service = try ExecutableTests.launch("image-service", [
            "--rpc", "ipc://\(data)/rpc.sock", "--events", "ipc://\(data)/events.sock", "--data-dir", data,
            "--cache-bytes", String(1 << 30),
        ], endpoint: "ipc://\(data)/rpc.sock")
        defer { if service.process.isRunning { service.process.terminate() } }
        let client = try RPCClient(context: ExecutableTests.context, endpoint: service.endpoint)
        defer { client.close() }
        _ = try await client.call(HealthRPC.check, HealthCheckRequest(), options: Self.patient)
        let base = Self.blob(5_000_000, seed: 0)
        for seed in 0..<30 {
            var put = PutImageRequest()
            put.data = base
            withUnsafeBytes(of: UInt64(seed).bigEndian) { put.data.replaceSubrange(16..<24, with: $0) }
            let info = try await client.call(ImageServiceRPC.putImage, put, options: Self.patient)
            // Large blobs are cached by their second read, not by the put.
            var get = GetImageRequest()
            get.key = info.key
            _ = try await client.call(ImageServiceRPC.getImage, get, options: Self.patient)
            _ = try await client.call(ImageServiceRPC.getImage, get, options: Self.patient)
        }
        let stats = try await client.call(ImageServiceRPC.cacheStats, CacheStatsRequest())
        #expect(stats.bytes >= 150_000_000)
        let pid = service.process.processIdentifier
        let before = Self.residentBytes(pid)
        let purge = try await client.call(ImageServiceRPC.purgeCache, PurgeCacheRequest())
        #expect(purge.freedBytes == stats.bytes && purge.bytes == 0)
        let after = Self.residentBytes(pid)
        #expect(before > 0 && after > 0)
        // Most of what the cache held goes back to the operating system.
        #expect(before - after >= Int(stats.bytes) / 2, "RSS \(before) → \(after) after freeing \(stats.bytes) bytes")
        kill(pid, SIGTERM)
        #expect(await ExecutableTests.waitForExit(service.process, seconds: 10))
    }
}
