/// Settings shared by the stateless workers, from flags and HOMEPWNER_* variables.
public struct WorkerConfiguration: Sendable {
    /// Where the worker answers Health/Check (use tcp://127.0.0.1:0 for any free port).
    public var healthEndpoint: String
    /// The item service's RPC endpoint.
    public var itemServiceEndpoint: String
    /// The image service's RPC endpoint.
    public var imageServiceEndpoint: String
    /// Jobs worked on at once.
    public var concurrency: Int

    /// A configuration.
    public init(
        healthEndpoint: String, itemServiceEndpoint: String = Defaults.itemRPC,
        imageServiceEndpoint: String = Defaults.imageRPC, concurrency: Int = 2
    ) {
        self.healthEndpoint = healthEndpoint
        self.itemServiceEndpoint = itemServiceEndpoint
        self.imageServiceEndpoint = imageServiceEndpoint
        self.concurrency = concurrency
    }

    /// The flags of a worker executable whose health endpoint has the given variable and default.
    public static func options(healthEnv: String, healthDefault: String) -> [OptionSpec] {
        [
            OptionSpec(name: "rpc", env: healthEnv, defaultValue: healthDefault,
                       help: "Health endpoint to bind (ROUTER); tcp://127.0.0.1:0 picks a free port", valueName: "ENDPOINT"),
            OptionSpec(name: "item-service", env: EnvironmentNames.itemRPC, defaultValue: Defaults.itemRPC,
                       help: "item service RPC endpoint", valueName: "ENDPOINT"),
            OptionSpec(name: "image-service", env: EnvironmentNames.imageRPC, defaultValue: Defaults.imageRPC,
                       help: "image service RPC endpoint", valueName: "ENDPOINT"),
            OptionSpec(name: "concurrency", env: nil, defaultValue: "2", help: "jobs worked on at once", valueName: "N"),
        ]
    }

    /// Reads the parsed flags.
    public init(_ options: ParsedOptions) throws {
        let concurrency = try options.int("concurrency")
        guard (1...256).contains(concurrency) else {
            throw OptionError.invalidValue(option: "--concurrency", value: String(concurrency), reason: "must be 1…256")
        }
        self.init(
            healthEndpoint: try options.string("rpc"), itemServiceEndpoint: try options.string("item-service"),
            imageServiceEndpoint: try options.string("image-service"), concurrency: concurrency)
    }
}
