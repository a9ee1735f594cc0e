import Capture
import Clients
import Foundation
import Harness
import RPC
import Runtime

/// `homepwner up`: the whole suite in one foreground process on embedded defaults.
enum UpCommand {
    static let parser = OptionParser(
        command: "up",
        summary: "Runs item-service, image-service, capture-worker and thumbnail-worker in this process until Ctrl-C.",
        options: [
            OptionSpec(name: "data-dir", env: EnvironmentNames.dataDir, defaultValue: Defaults.dataDir,
                       help: "data root (items/ and images/ inside)", valueName: "DIR"),
            OptionSpec(name: "item-rpc", env: EnvironmentNames.itemRPC, defaultValue: Defaults.itemRPC,
                       help: "item-service RPC endpoint", valueName: "ENDPOINT"),
            OptionSpec(name: "item-events", env: EnvironmentNames.itemEvents, defaultValue: Defaults.itemEvents,
                       help: "item-service event endpoint", valueName: "ENDPOINT"),
            OptionSpec(name: "image-rpc", env: EnvironmentNames.imageRPC, defaultValue: Defaults.imageRPC,
                       help: "image-service RPC endpoint", valueName: "ENDPOINT"),
            OptionSpec(name: "image-events", env: EnvironmentNames.imageEvents, defaultValue: Defaults.imageEvents,
                       help: "image-service event endpoint", valueName: "ENDPOINT"),
            OptionSpec(name: "capture-worker-rpc", env: EnvironmentNames.captureWorkerHealth,
                       defaultValue: Defaults.captureWorkerHealth, help: "capture-worker Health endpoint", valueName: "ENDPOINT"),
            OptionSpec(name: "thumbnail-worker-rpc", env: EnvironmentNames.thumbnailWorkerHealth,
                       defaultValue: Defaults.thumbnailWorkerHealth, help: "thumbnail-worker Health endpoint",
                       valueName: "ENDPOINT"),
            ProcessRunner.metricsOption(environment: EnvironmentNames.upMetrics), ProcessRunner.metricsTokenOption,
        ] + CaptureSources.options + ProcessRunner.commonOptions)

    static func run(_ arguments: [String]) async -> Int32 {
        guard let options = HomepwnerCLI.parse(parser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        do {
            let levelText = try options.string("log-level")
            guard let level = LogLevel(string: levelText) else {
                printError("homepwner up: --log-level: unknown level '\(levelText)'")
                return ExitCode.usage
            }
            let logger = Logger(label: "homepwner-up", level: level)
            // The whole suite in one process: its freed heap goes back as the services' does.
            MallocTuning.trimForTheProcess()
            let endpoints = ServiceEndpoints(
                itemRPC: try options.string("item-rpc"), itemEvents: try options.string("item-events"),
                imageRPC: try options.string("image-rpc"), imageEvents: try options.string("image-events"),
                captureWorkerHealth: try options.string("capture-worker-rpc"),
                thumbnailWorkerHealth: try options.string("thumbnail-worker-rpc"))
            let dataDirectory = try options.string("data-dir")
            // With keys, every part serves CURVE and calls the others with the client key; the
            // harness runs the ZAP handler and the scrape endpoint as the executables do.
            let harness = try Harness(
                dataDirectory: dataDirectory, endpoints: endpoints, logger: logger, captureSources: try CaptureSources(options),
                security: try TransportSecurity.load(options, logger: logger), metrics: try ProcessServices.Metrics.from(options))
            logger.notice("homepwner up: data in \(dataDirectory); Ctrl-C stops", [
                "item": endpoints.itemRPC, "image": endpoints.imageRPC,
            ])
            try await ServiceGroup(services: [harness], logger: logger).run()
            return ExitCode.ok
        } catch {
            printError("homepwner up: \(error)")
            if "\(error)".contains("Address already in use") {
                printError("hint: another suite is running on these ports; stop it or pass other endpoints (see --help)")
            }
            return ExitCode.failure
        }
    }
}
