import CurveAuth
import Proto
import Runtime
import ZMQ

/// What a process runs around its parts, the same for an executable (`ProcessRunner`) and for
/// the suite in one process (`Harness`, `homepwner up`): with server keys, the ZAP handler, the
/// allowed keys' watcher and their SIGHUP reload start before the parts (their sockets need the
/// handler); with a metrics endpoint, the scrape endpoint starts after them (it reads their
/// hosts) and stops first.
public struct ProcessServices: Sendable {
    /// Where to serve Prometheus text, and what scrapers must present.
    public struct Metrics: Sendable {
        public let endpoint: String
        public let token: BearerToken?

        public init(endpoint: String, token: BearerToken? = nil) {
            self.endpoint = endpoint
            self.token = token
        }

        /// `--metrics` and `--metrics-token-file`; nil when `--metrics` is empty.
        public static func from(_ options: ParsedOptions) throws -> Metrics? {
            guard let endpoint = options["metrics"], !endpoint.isEmpty else { return nil }
            return Metrics(endpoint: endpoint, token: try ProcessRunner.metricsToken(options))
        }
    }

    /// Started before the parts, stopped after them.
    public let first: [any LifecycleService]
    /// Started after the parts, stopped before them.
    public let last: [any LifecycleService]

    /// The services of a process named `name` whose context has `security` installed (nil:
    /// none); `hosts` gives the parts' hosts each time the metrics are rendered.
    public init(
        name: String, security: TransportSecurity?, metrics: Metrics?, context: Context, logger: Logger,
        hosts: @escaping @Sendable () -> [ServiceHost]
    ) throws {
        first = security?.services(context: context, logger: logger) ?? []
        if let metrics {
            last = [
                try ScrapeEndpoint(name: name, context: context, endpoint: metrics.endpoint, token: metrics.token, logger: logger) {
                    var stats: [ProcessStatsResponse] = []
                    for host in hosts() { stats.append(await host.server.processStats(figuresWithin: 5000)) }
                    return PrometheusText.render(stats)
                }
            ]
        } else {
            last = []
        }
    }

    /// The scrape endpoint, when there is one.
    public var scrape: ScrapeEndpoint? { last.lazy.compactMap { $0 as? ScrapeEndpoint }.first }

    /// `parts` with these services around them, in start order.
    public func around(_ parts: ServiceComposition) -> ServiceComposition {
        ServiceComposition(first + parts.services + last)
    }
}
