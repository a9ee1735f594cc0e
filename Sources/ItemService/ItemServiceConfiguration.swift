import Capture
import JobQueue
import Runtime

/// Settings of item-service, from flags and HOMEPWNER_* variables.
public struct ItemServiceConfiguration: Sendable {
    /// The ROUTER endpoint for RPC.
    public var rpcEndpoint: String
    /// The PUB endpoint for events.
    public var eventsEndpoint: String
    /// The data root; the service keeps its files in `<dataDirectory>/items`.
    public var dataDirectory: String
    /// Where the image service answers (the cascade target).
    public var imageServiceEndpoint: String
    /// The frame size limit.
    public var maxMessageBytes: Int
    /// A database copied into the data folder when none exists there yet (nil: start empty).
    public var seedDatabase: String?
    /// Where capture finds photos (ListSources, and the sources a Capture may name).
    public var captureSources: CaptureSources
    /// How long the `cascade` and `capture` queues keep what finished.
    public var jobRetention = JobRetention()

    /// A configuration; every value has the protocol's default.
    public init(
        rpcEndpoint: String = Defaults.itemRPC, eventsEndpoint: String = Defaults.itemEvents,
        dataDirectory: String = Defaults.dataDir, imageServiceEndpoint: String = Defaults.imageRPC,
        maxMessageBytes: Int = Defaults.maxMessageBytes, seedDatabase: String? = nil,
        captureSources: CaptureSources = CaptureSources()
    ) {
        self.captureSources = captureSources
        self.rpcEndpoint = rpcEndpoint
        self.eventsEndpoint = eventsEndpoint
        self.dataDirectory = dataDirectory
        self.imageServiceEndpoint = imageServiceEndpoint
        self.maxMessageBytes = maxMessageBytes
        self.seedDatabase = seedDatabase
    }

    /// The flags of the item-service executable.
    public static let options: [OptionSpec] = [
        OptionSpec(name: "rpc", env: EnvironmentNames.itemRPC, defaultValue: Defaults.itemRPC,
                   help: "RPC endpoint to bind (ROUTER)", valueName: "ENDPOINT"),
        OptionSpec(name: "events", env: EnvironmentNames.itemEvents, defaultValue: Defaults.itemEvents,
                   help: "event endpoint to bind (PUB)", valueName: "ENDPOINT"),
        OptionSpec(name: "data-dir", env: EnvironmentNames.dataDir, defaultValue: Defaults.dataDir,
                   help: "data root; items live in DIR/items", valueName: "DIR"),
        OptionSpec(name: "image-service", env: EnvironmentNames.imageRPC, defaultValue: Defaults.imageRPC,
                   help: "image service RPC endpoint (delete cascades go there)", valueName: "ENDPOINT"),
        OptionSpec(name: "max-message-bytes", env: EnvironmentNames.maxMessageBytes,
                   defaultValue: String(Defaults.maxMessageBytes), help: "largest frame accepted", valueName: "BYTES"),
        OptionSpec(name: "seed-db", env: EnvironmentNames.itemSeedDB, defaultValue: nil,
                   help: "SQLite file copied to DIR/items/items.db when that does not exist yet", valueName: "FILE"),
    ] + CaptureSources.options + JobRetention.options

    /// Reads the parsed flags.
    public init(_ options: ParsedOptions) throws {
        self.init(
            rpcEndpoint: try options.string("rpc"), eventsEndpoint: try options.string("events"),
            dataDirectory: try options.string("data-dir"), imageServiceEndpoint: try options.string("image-service"),
            maxMessageBytes: try options.int("max-message-bytes"), seedDatabase: options["seed-db"],
            captureSources: try CaptureSources(options))
        jobRetention = try JobRetention(options)
    }
}
