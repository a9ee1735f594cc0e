import Foundation
import Proto
import Runtime
import Locking

/// Metrics/Stats: what the server has seen by method, status and latency, its own counters,
/// memory, and the figures the process's parts add (docs/protocol.md 8.1).
extension RPCServer {
    /// Adds a source of figures (queue depths, cache, cascades) to Metrics/Stats and the scrape
    /// endpoint. Called at every Stats call and scrape: it should be quick (read counters, or
    /// run one small query on the store's thread) and give what it can when a part is closed.
    public func addFigures(_ source: @escaping @Sendable () async -> [Figure]) {
        shared.withLock { $0.figureSources.append(source) }
    }

    /// Everything Metrics/Stats answers, read now.
    public func processStats() async -> ProcessStatsResponse {
        processStats(figures: await Self.figures(from: shared.withLock { $0.figureSources }))
    }

    /// What the sources give, in order.
    private static func figures(from sources: [@Sendable () async -> [Figure]]) async -> [Figure] {
        var figures: [Figure] = []
        for source in sources { figures += await source() }
        return figures
    }

    /// The stats with these figures.
    func processStats(figures: [Figure]) -> ProcessStatsResponse {
        let metrics = shared.withLock { $0.metrics }
        var response = ProcessStatsResponse()
        response.process = configuration.processName
        response.version = HomepwnerVersion.string
        response.uptimeMs = UInt64(max(0, monotonicMilliseconds() - startedAt))
        let memory = ProcessMemory.current()
        response.rssBytes = memory.residentBytes
        response.peakRssBytes = memory.peakResidentBytes
        let counted = stats
        var server = ServerCounters()
        server.received = UInt64(counted.received)
        server.replied = UInt64(counted.replied)
        server.malformed = UInt64(counted.malformed)
        server.dropped = UInt64(counted.dropped)
        server.deadlineExceeded = UInt64(counted.deadlineExceeded)
        server.rejectedBusy = UInt64(counted.rejectedBusy)
        server.replayed = UInt64(counted.replayed)
        server.unauthenticated = UInt64(counted.unauthenticated)
        server.permissionDenied = UInt64(counted.permissionDenied)
        server.inFlight = UInt64(counted.inFlight)
        server.inFlightBytes = UInt64(counted.inFlightBytes)
        response.server = server
        response.methods = metrics?.snapshot() ?? []
        let conditions = self.conditions
        response.conditions = conditions
        let conditionFigures = conditions.map { condition in
            Figure(
                "homepwner_health_condition", "Conditions Health/Check reports (1 while set): the process serves, degraded",
                labels: ["condition": condition.name], value: 1)
        }
        response.figures = (figures + conditionFigures).sorted { ($0.name, $0.labelText) < ($1.name, $1.labelText) }
        return response
    }

    /// `processStats()` for a scrape: answers within `milliseconds` whatever the parts' figures
    /// do, without them when they are late (a part stopping, a store busy); their task is left
    /// to finish on its own, as a figure source need not heed cancellation.
    public func processStats(figuresWithin milliseconds: Int) async -> ProcessStatsResponse {
        let sources = shared.withLock { $0.figureSources }
        let figures: [Figure]? = await withVisibleCheckedContinuation { continuation in
            let first = FirstResult(continuation)
            let timer = Task {
                guard (try? await Task.sleep(for: .milliseconds(milliseconds))) != nil else { return }
                first.resume(nil)
            }
            Task(priority: Self.handlerPriority) {
                let figures = await Self.figures(from: sources)
                timer.cancel()
                first.resume(figures)
            }
        }
        guard let figures else {
            logger.warning("figures took over \(milliseconds) ms; served without them")
            return processStats(figures: [])
        }
        return processStats(figures: figures)
    }

    /// Registers Metrics/Stats: pooled (reading the figures may take a lock a store holds).
    func registerMetrics() {
        register(MetricsRPC.stats) { [weak self] _, _ in
            await self?.processStats() ?? ProcessStatsResponse()
        }
    }
}

extension Figure {
    /// A gauge or counter with labels.
    public init(_ name: String, _ help: String, _ kind: Kind = .gauge, labels: [String: String] = [:], value: Double) {
        self.init()
        self.name = name
        self.help = help
        self.kind = kind
        self.labels = labels.sorted { $0.key < $1.key }.map { key, value in
            var label = FigureLabel()
            label.name = key
            label.value = value
            return label
        }
        self.value = value
    }

    /// `name="value",…` of its labels, for sorting and the text format.
    var labelText: String {
        labels.map { "\($0.name)=\"\($0.value)\"" }.joined(separator: ",")
    }
}
