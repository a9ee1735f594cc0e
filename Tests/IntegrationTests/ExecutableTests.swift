import Foundation
import Proto
import RPC
import Testing
import ZMQ

/// The real executables: each starts, serves Health and stops cleanly on SIGTERM and SIGINT.
@Suite struct ExecutableTests {
    static let context = try! Context()

    /// The folder holding the built executables (next to the test bundle).
    static var binDirectory: URL {
        if let bin = ProcessInfo.processInfo.environment["HOMEPWNER_BIN"] { return URL(fileURLWithPath: bin) }
        var url = Bundle.main.bundleURL
        while url.path != "/" && !FileManager.default.fileExists(atPath: url.appendingPathComponent("item-service").path) {
            url.deleteLastPathComponent()
        }
        return url
    }

    /// A fresh folder; endpoints are ipc sockets inside it, so parallel tests never collide
    /// (a "free" tcp port can be taken by another test between choosing and binding it).
    static func folder() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("hp-exe-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    struct Launched {
        let process: Process
        let stderr: Pipe
        let endpoint: String
    }

    static func launch(_ name: String, _ arguments: [String], endpoint: String, environment: [String: String] = [:]) throws -> Launched {
        let process = Process()
        process.executableURL = binDirectory.appendingPathComponent(name)
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, given in given }
        }
        let stderr = Pipe()
        process.standardError = stderr
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        return Launched(process: process, stderr: stderr, endpoint: endpoint)
    }

    static func waitForExit(_ process: Process, seconds: Double) async -> Bool {
        let end = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while process.isRunning && ContinuousClock.now < end { try? await Task.sleep(for: .milliseconds(20)) }
        return !process.isRunning
    }

    @Test(arguments: ["item-service", "image-service", "capture-worker", "thumbnail-worker"])
    func executableServesHealthAndStopsCleanlyOnSIGTERM(_ name: String) async throws {
        let data = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: data) }
        let rpc = "ipc://\(data)/rpc.sock"
        var arguments = ["--rpc", rpc]
        if name.hasSuffix("-service") {
            arguments += ["--events", "ipc://\(data)/events.sock", "--data-dir", data]
        }
        let launched = try Self.launch(name, arguments, endpoint: rpc)
        defer { if launched.process.isRunning { launched.process.terminate() } }

        let client = try RPCClient(context: Self.context, endpoint: rpc, configuration: .init(connectWaitMilliseconds: 500))
        defer { client.close() }
        let response = try await client.call(
            HealthRPC.check, HealthCheckRequest(),
            options: patient)
        #expect(response.status == .serving)
        #expect(response.process == name)

        kill(launched.process.processIdentifier, SIGTERM)
        #expect(await Self.waitForExit(launched.process, seconds: 10))
        #expect(launched.process.terminationStatus == 0)
        let log = String(decoding: launched.stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(log.contains("received SIGTERM"))
        #expect(log.contains("stopped cleanly"))
    }

    @Test func serviceExitsWithUsageErrorOnUnknownFlag() async throws {
        let launched = try Self.launch("item-service", ["--rcp", "x"], endpoint: "")
        #expect(await Self.waitForExit(launched.process, seconds: 10))
        #expect(launched.process.terminationStatus == 2)
        let log = String(decoding: launched.stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(log.contains("did you mean '--rpc'"))
    }

    @Test func serviceFailsWithExitOneWhenItsPortIsTaken() async throws {
        let holder = try Socket(Self.context, .router)
        defer { holder.close() }
        try holder.bind("tcp://127.0.0.1:*")
        let taken = try holder.lastEndpoint
        let data = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: data) }
        let launched = try Self.launch(
            "image-service", ["--rpc", taken, "--events", "ipc://\(data)/events.sock", "--data-dir", data],
            endpoint: taken)
        #expect(await Self.waitForExit(launched.process, seconds: 10))
        #expect(launched.process.terminationStatus == 1)
        let log = String(decoding: launched.stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(log.contains("Address already in use"))
    }

    @Test func homepwnerUpRunsTheSuiteAndHealthSeesIt() async throws {
        let data = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: data) }
        let endpoints = ["item", "item-events", "image", "image-events", "capture", "thumbnail"].map { "ipc://\(data)/\($0).sock" }
        let up = try Self.launch("homepwner", [
            "up", "--data-dir", data, "--item-rpc", endpoints[0], "--item-events", endpoints[1],
            "--image-rpc", endpoints[2], "--image-events", endpoints[3], "--capture-worker-rpc", endpoints[4],
            "--thumbnail-worker-rpc", endpoints[5],
        ], endpoint: endpoints[0])
        defer { if up.process.isRunning { up.process.terminate() } }
        let client = try RPCClient(context: Self.context, endpoint: endpoints[2])
        defer { client.close() }
        _ = try await client.call(
            HealthRPC.check, HealthCheckRequest(),
            options: patient)

        let health = try await CLITests.homepwner([
            "health", "all", "--json", "--item", endpoints[0], "--image", endpoints[2],
            "--capture-worker", endpoints[4], "--thumbnail-worker", endpoints[5],
        ])
        #expect(health.status == 0)
        #expect(health.stdout.components(separatedBy: "\"SERVING\"").count == 5, "\(health.stdout)")

        kill(up.process.processIdentifier, SIGINT)
        #expect(await Self.waitForExit(up.process, seconds: 10))
        #expect(up.process.terminationStatus == 0)
    }
}
