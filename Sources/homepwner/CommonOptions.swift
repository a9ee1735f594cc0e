import Clients
import Proto
import RPC
import Runtime
import ZMQ

/// Options shared by the commands that talk to the services.
enum CommonOptions {
    static let endpoints: [OptionSpec] = [
        OptionSpec(name: "item", env: EnvironmentNames.itemRPC, defaultValue: Defaults.itemRPC,
                   help: "item-service RPC endpoint", valueName: "ENDPOINT"),
        OptionSpec(name: "image", env: EnvironmentNames.imageRPC, defaultValue: Defaults.imageRPC,
                   help: "image-service RPC endpoint", valueName: "ENDPOINT"),
        OptionSpec(name: "timeout", env: nil, defaultValue: "10000", help: "per-call timeout", valueName: "MS"),
        OptionSpec(name: "json", env: nil, defaultValue: nil, help: "print JSON for scripts", isFlag: true),
    ] + CLIContext.options

    /// The timeout flag, checked.
    static func timeout(_ options: ParsedOptions) throws -> UInt32 {
        let value = try options.int("timeout")
        guard value > 0, value <= 3_600_000 else {
            throw OptionError.invalidValue(option: "--timeout", value: String(value), reason: "must be 1…3600000 ms")
        }
        return UInt32(value)
    }

    /// The endpoint option ("item" or "image") of the process that serves `queue`
    /// (`JobQueueSpec.host`); a name the protocol does not have goes to image-service, which
    /// answers NOT_FOUND naming the queues it serves.
    static func service(servingQueue queue: String) -> String {
        (JobQueueSpec.named(queue)?.host ?? .image).rawValue
    }

    /// Connects to the endpoint in option `service` ("item" or "image") and runs `body` with
    /// the client and the --timeout; turns failures into exit codes (usage, status, failure).
    static func withClient(
        _ options: ParsedOptions, service: String, command: String,
        _ body: (RPCClient, UInt32) async throws -> Void
    ) async -> Int32 {
        await withClientExitCode(options, service: service, command: command) { client, timeout in
            try await body(client, timeout)
            return ExitCode.ok
        }
    }

    /// `withClient` for a body that decides its own exit code when it ends without an error.
    static func withClientExitCode(
        _ options: ParsedOptions, service: String, command: String,
        _ body: (RPCClient, UInt32) async throws -> Int32
    ) async -> Int32 {
        let timeout: UInt32
        let endpoint: String
        do {
            timeout = try CommonOptions.timeout(options)
            endpoint = try options.string(service)
        } catch {
            printError("homepwner \(command): \(error)")
            return ExitCode.usage
        }
        do {
            let context = try CLIContext.make(options)
            let client = try RPCClient(context: context, endpoint: endpoint)
            defer { client.close() }
            return try await body(client, timeout)
        } catch let error as RPCError {
            return report(error, json: options.bool("json"))
        } catch let error as OptionError {
            // A flag's value checked once the service could be asked (a location by name).
            printError("homepwner \(command): \(error)")
            return ExitCode.usage
        } catch {
            printError("homepwner \(command): \(error)")
            return ExitCode.failure
        }
    }
}
