import Runtime

/// Settings of image-service, from flags and HOMEPWNER_* variables.
public struct ImageServiceConfiguration: Sendable {
    /// The ROUTER endpoint for RPC.
    public var rpcEndpoint: String
    /// The PUB endpoint for events.
    public var eventsEndpoint: String
    /// The data root; the service keeps its files in `<dataDirectory>/images`.
    public var dataDirectory: String
    /// The frame size limit.
    public var maxMessageBytes: Int

    /// A configuration; every value has the protocol's default.
    public init(
        rpcEndpoint: String = Defaults.imageRPC, eventsEndpoint: String = Defaults.imageEvents,
        dataDirectory: String = Defaults.dataDir,
        maxMessageBytes: Int = Defaults.maxMessageBytes
    ) {
        self.rpcEndpoint = rpcEndpoint
        self.eventsEndpoint = eventsEndpoint
        self.dataDirectory = dataDirectory
        self.maxMessageBytes = maxMessageBytes
    }

    /// The flags of the image-service executable.
    public static let options: [OptionSpec] = [
        OptionSpec(name: "rpc", env: EnvironmentNames.imageRPC, defaultValue: Defaults.imageRPC,
                   help: "RPC endpoint to bind (ROUTER)", valueName: "ENDPOINT"),
        OptionSpec(name: "events", env: EnvironmentNames.imageEvents, defaultValue: Defaults.imageEvents,
                   help: "event endpoint to bind (PUB)", valueName: "ENDPOINT"),
        OptionSpec(name: "data-dir", env: EnvironmentNames.dataDir, defaultValue: Defaults.dataDir,
                   help: "data root; images live in DIR/images", valueName: "DIR"),
        OptionSpec(name: "max-message-bytes", env: EnvironmentNames.maxMessageBytes,
                   defaultValue: String(Defaults.maxMessageBytes), help: "largest frame accepted", valueName: "BYTES"),
    ]

    /// Reads the parsed flags.
    public init(_ options: ParsedOptions) throws {
        self.init(
            rpcEndpoint: try options.string("rpc"), eventsEndpoint: try options.string("events"),
            dataDirectory: try options.string("data-dir"),
            maxMessageBytes: try options.int("max-message-bytes"))
    }
}
