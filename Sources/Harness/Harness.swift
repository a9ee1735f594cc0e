import Capture
import CaptureWorker
import Clients
import Foundation
import ImageService
import ItemService
import RPC
import Runtime
import Locking
import ThumbnailWorker
import ZMQ

/// The whole suite in one process: item service, image service, capture worker and
/// thumbnail worker on real sockets, with a data folder of their own.
///
/// Each part is the `ServiceComposition` its executable runs, from the same factory, started and
/// stopped in the same order. Tests bring it up on ipc endpoints in a temporary folder and stop
/// or restart any part (fault tests); `homepwner up` runs it on the loopback defaults.
public final class Harness: Sendable {
    /// One part of the suite.
    public enum Part: String, CaseIterable, Sendable {
        case itemService = "item-service"
        case imageService = "image-service"
        case captureWorker = "capture-worker"
        case thumbnailWorker = "thumbnail-worker"

        /// The order the parts start in: each after what it calls (item-service's cascade calls
        /// image-service; the workers call both). They stop in the reverse order.
        public static let startOrder: [Part] = [.imageService, .itemService, .captureWorker, .thumbnailWorker]
    }

    /// The endpoints every part binds or connects to.
    public let endpoints: ServiceEndpoints
    /// The data root (items in `items/`, images in `images/`).
    public let dataDirectory: String
    /// Where item-service and capture-worker find photos to capture (both get the same).
    public let captureSources: CaptureSources
    /// The ZeroMQ context shared by every part and client.
    public let context: Context
    private let logger: Logger
    private let ownsDataDirectory: Bool
    private let parts = Locked<[Part: ServiceComposition]>([:])
    /// What runs around the parts (`ProcessServices`), and which of it has started, by name.
    private let process: ProcessServices
    private let processStarted = Locked<Set<String>>([])
    private let faults = Locked<[String]>([])
    /// Ends `run()` at the first part stopped by a fault.
    private let stopped: FaultWatch

    /// A harness on ipc endpoints in a new temporary folder, which `shutdown()` removes.
    ///
    /// - Parameters:
    ///   - security: The keys every part serves and calls with (nil: none), as each executable's.
    ///   - metrics: A scrape endpoint serving the four parts' figures (nil: none).
    public convenience init(
        logger: Logger = Logger(label: "harness", level: .warning), captureSources: CaptureSources = CaptureSources(),
        security: TransportSecurity? = nil, metrics: ProcessServices.Metrics? = nil
    ) throws {
        let folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("homepwner-\(UUID().uuidString.prefix(8).lowercased())").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try self.init(
            dataDirectory: folder + "/data", endpoints: .ipc(in: folder), logger: logger, ownsDataDirectory: true,
            captureSources: captureSources, security: security, metrics: metrics)
    }

    /// A harness on the given endpoints and data folder (kept on shutdown).
    public convenience init(
        dataDirectory: String, endpoints: ServiceEndpoints, logger: Logger, captureSources: CaptureSources = CaptureSources(),
        security: TransportSecurity? = nil, metrics: ProcessServices.Metrics? = nil
    ) throws {
        try self.init(
            dataDirectory: dataDirectory, endpoints: endpoints, logger: logger, ownsDataDirectory: false,
            captureSources: captureSources, security: security, metrics: metrics)
    }

    private init(
        dataDirectory: String, endpoints: ServiceEndpoints, logger: Logger, ownsDataDirectory: Bool, captureSources: CaptureSources,
        security: TransportSecurity?, metrics: ProcessServices.Metrics?
    ) throws {
        self.captureSources = captureSources
        self.dataDirectory = dataDirectory
        self.endpoints = endpoints
        self.logger = logger
        self.ownsDataDirectory = ownsDataDirectory
        let context = try Context(ioThreads: 1)
        self.context = context
        stopped = FaultWatch(logger: logger)
        try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
        // Keys first: every socket the parts make is made with them.
        security?.install(on: context)
        let running = RunningHosts()
        process = try ProcessServices(
            name: "homepwner-up", security: security, metrics: metrics, context: context, logger: logger,
            hosts: { running.harness.withLock { $0.value }?.runningHosts ?? [] })
        running.harness.withLock { $0 = Weak(self) }
    }

    /// The hosts of the running parts, in start order (a part restarted by a test is read where it runs now).
    var runningHosts: [ServiceHost] { Part.startOrder.compactMap { host($0) } }

    /// Starts what is not running: the process's services before the parts (ZAP handler, keys'
    /// watcher), every part in `Part.startOrder`, then the scrape endpoint, as an executable does.
    public func start() throws {
        try startProcessServices(process.first)
        for part in Part.startOrder where !isRunning(part) { try start(part) }
        try startProcessServices(process.last)
    }

    /// The scrape endpoint serving the parts' figures, once started with `metrics`.
    public var scrapeEndpoint: ScrapeEndpoint? { process.scrape }

    /// Starts those of `services` not started yet, in order.
    private func startProcessServices(_ services: [any LifecycleService]) throws {
        for service in services where !processStarted.withLock({ $0.contains(service.name) }) {
            try service.start()
            processStarted.withLock { _ = $0.insert(service.name) }
        }
    }

    /// Stops those of `services` started, the last first.
    private func stopProcessServices(_ services: [any LifecycleService]) {
        for service in services.reversed() where processStarted.withLock({ $0.remove(service.name) != nil }) {
            service.stop()
        }
    }

    /// Starts one part; throws when it is running already or cannot bind.
    ///
    /// A storage fault in the part (`FaultWatch`) stops it, as its executable would stop, and
    /// ends `run()` with the fault (`homepwner up` then exits 1).
    public func start(_ part: Part) throws {
        guard !isRunning(part) else { throw HarnessError("\(part.rawValue) is running already") }
        let composition = try makeComposition(part)
        try composition.start()
        parts.withLock { $0[part] = composition }
        if let watch = composition.first(FaultWatch.self) {
            // `watch` weakly too: it keeps this closure, so a strong capture is a cycle that
            // kept every stopped composition's FaultWatch (found by LeakSanitizer).
            watch.onFault { [weak self, weak watch] reason in
                guard let self, let watch else { return }
                // Only this composition: the part may have been restarted since.
                let current = parts.withLock { parts -> ServiceComposition? in
                    guard let running = parts[part], running.first(FaultWatch.self) === watch else { return nil }
                    return parts.removeValue(forKey: part)
                }
                current?.stop()
                faults.withLock { $0.append("\(part.rawValue): \(reason)") }
                stopped.report("\(part.rawValue): \(reason)")
            }
        }
    }

    /// The storage faults that stopped parts, "<part>: <reason>", oldest first.
    public var faultsSeen: [String] { faults.withLock { $0 } }

    /// Stops one part and closes its sockets, as a crash of that process would look to its peers.
    public func stop(_ part: Part) {
        let composition = parts.withLock { $0.removeValue(forKey: part) }
        composition?.stop()
    }

    /// Stops and starts one part on the same endpoints and data.
    public func restart(_ part: Part) throws {
        stop(part)
        try start(part)
    }

    /// Whether a part is up.
    public func isRunning(_ part: Part) -> Bool { parts.withLock { $0[part] != nil } }

    /// The host of a running part (its server, events and endpoints).
    public func host(_ part: Part) -> ServiceHost? { composition(part)?.host }

    /// The composition of a running part (its stores, background services and host).
    public func composition(_ part: Part) -> ServiceComposition? { parts.withLock { $0[part] } }

    /// The RPC (or Health) endpoint of a part.
    public func endpoint(_ part: Part) -> String {
        switch part {
        case .itemService: endpoints.itemRPC
        case .imageService: endpoints.imageRPC
        case .captureWorker: endpoints.captureWorkerHealth
        case .thumbnailWorker: endpoints.thumbnailWorkerHealth
        }
    }

    /// A new client of a part's endpoint; the caller closes it.
    public func client(_ part: Part, configuration: RPCClient.Configuration = .init()) throws -> RPCClient {
        try RPCClient(context: context, endpoint: endpoint(part), configuration: configuration)
    }

    /// Clients of both services; the caller closes them.
    public func clients(configuration: RPCClient.Configuration = .init()) throws -> HomepwnerClients {
        try HomepwnerClients(context: context, endpoints: endpoints, configuration: configuration)
    }

    /// Stops the scrape endpoint, every part (workers first, image-service last), then the keys'
    /// services, and removes a temporary data folder.
    public func shutdown() {
        stopProcessServices(process.last)
        for part in Part.startOrder.reversed() { stop(part) }
        stopProcessServices(process.first)
        if ownsDataDirectory {
            try? FileManager.default.removeItem(atPath: (dataDirectory as NSString).deletingLastPathComponent)
        }
    }

    private func makeComposition(_ part: Part) throws -> ServiceComposition {
        let log = Logger(label: part.rawValue, level: logger.level, sink: logger.sink)
        let workers = WorkerConfiguration(
            healthEndpoint: endpoint(part), itemServiceEndpoint: endpoints.itemRPC,
            imageServiceEndpoint: endpoints.imageRPC)
        switch part {
        case .itemService:
            return try ItemServiceHost.make(
                ItemServiceConfiguration(
                    rpcEndpoint: endpoints.itemRPC, eventsEndpoint: endpoints.itemEvents,
                    dataDirectory: dataDirectory, imageServiceEndpoint: endpoints.imageRPC, captureSources: captureSources),
                context: context, logger: log)
        case .imageService:
            return try ImageServiceHost.make(
                ImageServiceConfiguration(
                    rpcEndpoint: endpoints.imageRPC, eventsEndpoint: endpoints.imageEvents,
                    dataDirectory: dataDirectory),
                context: context, logger: log)
        case .captureWorker:
            return try CaptureWorkerHost.make(workers, sources: captureSources, context: context, logger: log)
        case .thumbnailWorker:
            return try ThumbnailWorkerHost.make(workers, context: context, logger: log)
        }
    }
}

extension Harness: Service {
    public var name: String { "homepwner-up" }

    /// Starts every part, serves until cancelled or a part stops after a storage fault, then
    /// stops them all; throws `ProcessFault` in the second case.
    public func run() async throws {
        do {
            try await onThreadOfItsOwn(name) { try self.start() }
        } catch {
            await onThreadOfItsOwn(name) { self.shutdown() }
            throw error
        }
        let failed = await stopped.failure()
        await onThreadOfItsOwn(name) { self.shutdown() }
        if let failed { throw failed }
    }
}

/// A harness misuse, e.g. starting a part twice.
public struct HarnessError: Error, CustomStringConvertible, Sendable {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// The harness whose hosts the scrape endpoint reads, held weakly: the endpoint belongs to it.
private final class RunningHosts: Sendable {
    let harness = Locked<Weak<Harness>>(Weak(nil))
}

private struct Weak<T: AnyObject & Sendable>: Sendable {
    weak var value: T?

    init(_ value: T?) { self.value = value }
}
