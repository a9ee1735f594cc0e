import Clients
import Runtime

/// Options shared by the commands that talk to the services.
enum CommonOptions {
    static let endpoints: [OptionSpec] = [
        OptionSpec(name: "item", env: EnvironmentNames.itemRPC, defaultValue: Defaults.itemRPC,
                   help: "item-service RPC endpoint", valueName: "ENDPOINT"),
        OptionSpec(name: "image", env: EnvironmentNames.imageRPC, defaultValue: Defaults.imageRPC,
                   help: "image-service RPC endpoint", valueName: "ENDPOINT"),
        OptionSpec(name: "timeout", env: nil, defaultValue: "10000", help: "per-call timeout", valueName: "MS"),
        OptionSpec(name: "json", env: nil, defaultValue: nil, help: "print JSON for scripts", isFlag: true),
    ]

    /// The timeout flag, checked.
    static func timeout(_ options: ParsedOptions) throws -> UInt32 {
        let value = try options.int("timeout")
        guard value > 0, value <= 3_600_000 else {
            throw OptionError.invalidValue(option: "--timeout", value: String(value), reason: "must be 1…3600000 ms")
        }
        return UInt32(value)
    }
}
