import CurveAuth
import Foundation
import Runtime
import ZMQ

/// The shared `main` of every executable: options, logger, ZeroMQ context, signals, exit codes.
public enum ProcessRunner {
    /// Options every process understands.
    public static let commonOptions: [OptionSpec] = [
        OptionSpec(
            name: "log-level", env: EnvironmentNames.logLevel, defaultValue: "info",
            help: "trace, debug, info, notice, warning, error or critical", valueName: "LEVEL"),
    ] + TransportSecurity.options

    /// The `--metrics` option, read from `environment`.
    public static func metricsOption(environment: String) -> OptionSpec {
        OptionSpec(
            name: "metrics", env: environment, defaultValue: "",
            help: "Prometheus scrape endpoint to bind, e.g. tcp://0.0.0.0:9464 (GET /metrics); empty: none",
            valueName: "ENDPOINT")
    }

    /// The `--metrics-token-file` option: what scrapers must present.
    public static let metricsTokenOption = OptionSpec(
        name: "metrics-token-file", env: EnvironmentNames.metricsTokenFile, defaultValue: nil,
        help: "a bearer token file (mode 0600; keys init writes metrics.token) every scrape must present; "
            + "needed to serve metrics beyond loopback without --insecure",
        valueName: "FILE")

    /// The token `--metrics-token-file` names; nil when it is not given (or empty).
    public static func metricsToken(_ options: ParsedOptions) throws -> BearerToken? {
        guard let file = options["metrics-token-file"], !file.isEmpty else { return nil }
        return try BearerToken.load(file: file)
    }

    /// The parser `run` reads a command line with: `options`, then `--metrics`,
    /// `--metrics-token-file` and the common options.
    public static func parser(command: String, summary: String, options: [OptionSpec], metricsEnvironment: String) -> OptionParser {
        OptionParser(
            command: command, summary: summary,
            options: options + [metricsOption(environment: metricsEnvironment), metricsTokenOption] + commonOptions)
    }

    /// Parses options, builds the process's composition and runs its services in a
    /// `ServiceGroup` until SIGTERM/SIGINT (started in order, stopped in reverse); never returns.
    /// With `--metrics`, a scrape endpoint serving Metrics/Stats as Prometheus text runs last.
    ///
    /// Exit codes: 0 after a clean stop or `--help`, 2 for a usage error, 1 when a service failed.
    ///
    /// - Parameter arguments: the command line after the program's name (after `homepwner NAME`
    ///   when the multi-call CLI runs it).
    public static func run(
        command: String, summary: String, options: [OptionSpec], metricsEnvironment: String,
        arguments: [String] = Array(CommandLine.arguments.dropFirst()),
        makeComposition: (ParsedOptions, Context, Logger) throws -> ServiceComposition
    ) async -> Never {
        MallocTuning.forLargeMessages()
        MallocTuning.trimForTheProcess()
        let parser = parser(command: command, summary: summary, options: options, metricsEnvironment: metricsEnvironment)
        let parsed: ParsedOptions
        do {
            parsed = try parser.parse(arguments, environment: ProcessInfo.processInfo.environment)
        } catch {
            if case let .helpRequested(text) = error {
                print(text)
                exit(0)
            }
            FileHandle.standardError.write(Data("\(command): \(error)\n".utf8))
            exit(2)
        }
        let levelText = parsed["log-level"] ?? "info"
        guard let level = LogLevel(string: levelText) else {
            FileHandle.standardError.write(Data("\(command): --log-level: unknown level '\(levelText)' (one of \(LogLevel.allCases.map(\.rawValue).joined(separator: ", ")))\n".utf8))
            exit(2)
        }
        let logger = Logger(label: command, level: level)
        do {
            let context = try Context(ioThreads: 1)
            // Keys first: every socket the composition makes is made with them.
            let security = try TransportSecurity.load(parsed, logger: logger)
            security?.install(on: context)
            let parts = try makeComposition(parsed, context, logger)
            let hosts = parts.services.compactMap { $0 as? ServiceHost }
            let process = try ProcessServices(
                name: command, security: security, metrics: try ProcessServices.Metrics.from(parsed), context: context,
                logger: logger, hosts: { hosts })
            try await ServiceGroup(services: process.around(parts).services, logger: logger).run()
            logger.info("stopped cleanly")
            exit(0)
        } catch {
            logger.critical("\(error)")
            exit(1)
        }
    }
}
