import RPC
import Runtime

extension ServiceProgram {
    /// item-service: what its executable, `homepwner item-service` and a link of that name run.
    public static let itemService = ServiceProgram(
        command: "item-service",
        summary: "Serves the Homepwner items: SQLite store, manual order, photos per item, delete cascade.",
        options: ItemServiceConfiguration.options,
        metricsEnvironment: EnvironmentNames.itemMetrics
    ) { options, context, logger in
        try ItemServiceHost.make(try ItemServiceConfiguration(options), context: context, logger: logger)
    }
}
