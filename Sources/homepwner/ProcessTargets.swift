import Proto
import RPC
import Runtime
import ZMQ

/// The processes `health` and `stats` can ask, by name: item, image, capture-worker,
/// thumbnail-worker, or all, each at the endpoint of its option.
enum ProcessTargets {
    /// The worker endpoint options (item and image come with `CommonOptions.endpoints`).
    static let workerOptions: [OptionSpec] = [
        OptionSpec(name: "capture-worker", env: EnvironmentNames.captureWorkerHealth,
                   defaultValue: Defaults.captureWorkerHealth, help: "capture-worker RPC (Health) endpoint", valueName: "ENDPOINT"),
        OptionSpec(name: "thumbnail-worker", env: EnvironmentNames.thumbnailWorkerHealth,
                   defaultValue: Defaults.thumbnailWorkerHealth, help: "thumbnail-worker RPC (Health) endpoint",
                   valueName: "ENDPOINT"),
    ]

    /// The processes the positionals name (item and image when none), with their endpoints.
    static func select(_ options: ParsedOptions) throws -> [(name: String, endpoint: String)] {
        let all = [
            ("item-service", try options.string("item")), ("image-service", try options.string("image")),
            ("capture-worker", try options.string("capture-worker")),
            ("thumbnail-worker", try options.string("thumbnail-worker")),
        ]
        let names = options.positionals.isEmpty ? ["item", "image"] : options.positionals
        var chosen: [(name: String, endpoint: String)] = []
        for name in names {
            if name == "all" { return all }
            guard let match = all.first(where: { $0.0 == name || $0.0 == name + "-service" }) else {
                throw OptionError.invalidValue(
                    option: "service", value: name, reason: "one of item, image, capture-worker, thumbnail-worker, all")
            }
            chosen.append(match)
        }
        return chosen
    }

    /// A client per target, connecting in the background (`call` waits up to 1.5 s for each).
    static func connect(_ targets: [(name: String, endpoint: String)], context: Context) throws -> [RPCClient] {
        var clients: [RPCClient] = []
        do {
            for target in targets {
                clients.append(try RPCClient(context: context, endpoint: target.endpoint, configuration: .init(connectWaitMilliseconds: 1500)))
            }
        } catch {
            for client in clients { client.close() }
            throw error
        }
        return clients
    }

    /// Calls `method` on every client at once, without retries; results in client order.
    static func call<Request: ProtoMessage, Response: ProtoMessage>(
        _ clients: [RPCClient], _ method: ProtoMethod<Request, Response>, _ request: Request, timeout: UInt32
    ) async -> [Result<Response, RPCError>] {
        await withTaskGroup(of: (Int, Result<Response, RPCError>).self) { group in
            for (index, client) in clients.enumerated() {
                group.addTask {
                    do {
                        return (index, .success(try await client.call(method, request, options: .init(timeoutMilliseconds: timeout, retry: .none))))
                    } catch {
                        return (index, .failure(error as! RPCError))
                    }
                }
            }
            var results: [(Int, Result<Response, RPCError>)] = []
            for await result in group { results.append(result) }
            return results.sorted { $0.0 < $1.0 }.map(\.1)
        }
    }

    /// Connects to every target, calls `method` once on each, and closes.
    static func call<Request: ProtoMessage, Response: ProtoMessage>(
        _ targets: [(name: String, endpoint: String)], _ method: ProtoMethod<Request, Response>, _ request: Request,
        context: Context, timeout: UInt32
    ) async throws -> [(name: String, endpoint: String, result: Result<Response, RPCError>)] {
        let clients = try connect(targets, context: context)
        defer { for client in clients { client.close() } }
        let results = await call(clients, method, request, timeout: timeout)
        return zip(targets, results).map { ($0.0.name, $0.0.endpoint, $0.1) }
    }
}
