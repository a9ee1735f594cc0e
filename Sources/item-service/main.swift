import ItemService
import RPC
import Runtime

await ProcessRunner.run(
    command: "item-service",
    summary: "Serves the Homepwner items: SQLite store, manual order, photos per item, delete cascade.",
    options: ItemServiceConfiguration.options,
    metricsEnvironment: EnvironmentNames.itemMetrics
) { options, context, logger in
    try ItemServiceHost.make(try ItemServiceConfiguration(options), context: context, logger: logger)
}
