import Foundation
import Harness
import Proto
import RPC
import Runtime
import Testing
import TestSupport
import RPCTestSupport

/// The in-process suite: every part up on real ipc sockets, stopped and restarted one by one.
@Suite struct HarnessTests {
    @Test func everyPartAnswersHealthWhenUp() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start()
        for part in Harness.Part.allCases {
            let client = try harness.client(part)
            defer { client.close() }
            let response = try await client.call(HealthRPC.check, HealthCheckRequest())
            #expect(response.status == .serving, "\(part.rawValue)")
            #expect(response.process == part.rawValue)
        }
        #expect(FileManager.default.fileExists(atPath: harness.dataDirectory + "/items"))
        #expect(FileManager.default.fileExists(atPath: harness.dataDirectory + "/images"))
    }

    @Test func stoppedPartIsUnavailableAndRestartedPartRecoversWithTheSameClient() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start()
        let client = try harness.client(.imageService, configuration: .init(connectWaitMilliseconds: 200))
        defer { client.close() }
        #expect(try await client.call(HealthRPC.check, HealthCheckRequest()).process == "image-service")

        await offThePool { harness.stop(.imageService) }
        #expect(!harness.isRunning(.imageService))
        let error = await rpcError {
            try await client.call(HealthRPC.check, HealthCheckRequest(), options: .init(retry: .none))
        }
        #expect(error?.code == .unavailable)
        // The other parts are untouched.
        let items = try harness.client(.itemService)
        defer { items.close() }
        #expect(try await items.call(HealthRPC.check, HealthCheckRequest()).status == .serving)

        try harness.start(.imageService)
        let response = try await client.call(HealthRPC.check, HealthCheckRequest(), options: patient)
        #expect(response.status == .serving)
    }

    @Test func restartKeepsEndpointsAndDataFolder() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start()
        let marker = harness.dataDirectory + "/items/marker"
        #expect(FileManager.default.createFile(atPath: marker, contents: Data("kept".utf8)))
        for part in Harness.Part.allCases { try harness.restart(part) }
        #expect(FileManager.default.contents(atPath: marker) == Data("kept".utf8))
        let client = try harness.client(.thumbnailWorker)
        defer { client.close() }
        #expect(try await client.call(HealthRPC.check, HealthCheckRequest(), options: patient).status == .serving)
    }

    @Test func startingARunningPartIsRefused() throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start(.itemService)
        #expect(throws: HarnessError.self) { try harness.start(.itemService) }
    }

    @Test func eachPartStartsAfterWhatItCallsAndStopsBeforeIt() {
        let order = Harness.Part.startOrder
        #expect(Set(order) == Set(Harness.Part.allCases) && order.count == Harness.Part.allCases.count)
        // item-service's cascade calls image-service: it starts after it and stops first.
        #expect(order.firstIndex(of: .imageService)! < order.firstIndex(of: .itemService)!)
        for worker in [Harness.Part.captureWorker, .thumbnailWorker] {
            #expect(order.firstIndex(of: worker)! > order.firstIndex(of: .itemService)!)
        }
    }

    @Test func shutdownRemovesTheTemporaryFolder() throws {
        let harness = try Harness()
        try harness.start()
        let root = (harness.dataDirectory as NSString).deletingLastPathComponent
        #expect(FileManager.default.fileExists(atPath: root))
        harness.shutdown()
        #expect(!FileManager.default.fileExists(atPath: root))
    }
}


/// For calls right after a (re)start: libzmq reconnects with backoff, and a loaded test run
/// may delay everything; these options ride over both without bounding how fast it must be.
let patient = CallOptions(
    timeoutMilliseconds: 60_000,
    retry: RetryPolicy(maxAttempts: 200, initialBackoffMilliseconds: 50, maxBackoffMilliseconds: 300))
