import CLISupport
import Foundation
import Proto
import RPC
import Runtime
import ZMQ

/// `homepwner call METHOD 'JSON'`: any method, JSON in and out (what grpcurl is to gRPC).
enum CallCommand {
    static let parser = OptionParser(
        command: "call",
        summary: """
            Calls any method with a JSON request (converted by protobuf-c's descriptors) and prints the \
            JSON response. JSON may be given as an argument, '-' for stdin, or left out for an empty request.
            Example: homepwner call ItemService/CreateItem '{"name": "Rusty Spork", "valueInDollars": 42}'
            """,
        usage: "homepwner call METHOD [JSON|-] [options]",
        options: CommonOptions.endpoints + [
            OptionSpec(name: "to", env: nil, defaultValue: nil,
                       help: "item, image or an endpoint (default: the process serving METHOD; JobQueue by its queue; Health: item)",
                       valueName: "TARGET"),
            OptionSpec(name: "idempotency-key", env: nil, defaultValue: nil,
                       help: "key for a mutating call (default: a fresh one)", valueName: "KEY"),
            OptionSpec(name: "proto-names", env: nil, defaultValue: nil,
                       help: "print proto field names (value_in_dollars) instead of JSON names", isFlag: true),
            OptionSpec(name: "compact", env: nil, defaultValue: nil, help: "print the response on one line", isFlag: true),
        ],
        allowsPositionals: true)

    static func run(_ arguments: [String]) async -> Int32 {
        guard let options = HomepwnerCLI.parse(parser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        let json = options.bool("json")
        guard let methodName = options.positionals.first, options.positionals.count <= 2 else {
            printError("homepwner call: expected METHOD and at most one JSON argument (see 'homepwner call --help'; 'homepwner methods' lists methods)")
            return ExitCode.usage
        }
        guard let method = MethodLookup.method(named: methodName) else {
            let close = MethodLookup.suggestions(for: methodName)
            printError("homepwner call: unknown method '\(methodName)'"
                + (close.isEmpty ? "" : "; did you mean \(close.prefix(3).joined(separator: ", "))?")
                + " ('homepwner methods' lists them)")
            return ExitCode.usage
        }
        var text = options.positionals.count == 2 ? options.positionals[1] : ""
        if text == "-" {
            text = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
        }
        let body: [UInt8]
        let endpoint: String
        let timeout: UInt32
        do {
            body = try ProtoJSON.encode(json: text, as: method.requestType)
            timeout = try CommonOptions.timeout(options)
            endpoint = try target(for: method, request: body, options: options)
        } catch {
            printError("homepwner call: \(error)")
            if error is ProtoJSONError, let schema = SchemaText.describe(message: method.requestType) {
                printError("\(method.requestType):\n\(schema)")
            }
            return error is ProtoJSONError ? ExitCode.invalid : ExitCode.usage
        }
        do {
            let context = try CLIContext.make(options)
            let client = try RPCClient(context: context, endpoint: endpoint)
            defer { client.close() }
            let readOnly = ProtoCatalog.methods.first { $0.path == method.path }?.isReadOnly ?? false
            let reply = try await client.callRaw(
                path: method.path, body: body, readOnly: readOnly,
                options: CallOptions(timeoutMilliseconds: timeout, idempotencyKey: options["idempotency-key"]))
            let output = try ProtoJSON.decode(
                reply.body, as: method.responseType,
                options: .init(useProtoNames: options.bool("proto-names"), prettyPrinted: !options.bool("compact")))
            print(output)
            return ExitCode.ok
        } catch let error as RPCError {
            return report(error, json: json)
        } catch {
            printError("homepwner call: \(error)")
            return ExitCode.failure
        }
    }

    /// The endpoint that serves `method`: --to, else the process that serves its service.
    static func target(for method: MethodDescriptorInfo, request: [UInt8], options: ParsedOptions) throws -> String {
        if let to = options["to"] {
            switch to {
            case "item", "item-service": return try options.string("item")
            case "image", "image-service": return try options.string("image")
            default:
                guard to.contains("://") else {
                    throw OptionError.invalidValue(option: "--to", value: to, reason: "item, image or an endpoint like tcp://host:port")
                }
                return to
            }
        }
        switch method.service {
        case ImageServiceRPC.serviceName:
            return try options.string("image")
        case JobQueueRPC.serviceName:
            return try options.string(CommonOptions.service(servingQueue: queue(of: request, as: method.requestType)))
        default:
            // ItemService, CaptureService, and Health (every process serves it; --to picks another).
            return try options.string("item")
        }
    }

    /// The `queue` field of an encoded JobQueue request; empty when it has none.
    private static func queue(of request: [UInt8], as requestType: String) -> String {
        guard let json = try? ProtoJSON.decode(request, as: requestType, options: .init(useProtoNames: true, prettyPrinted: false)),
              let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
        else { return "" }
        return object["queue"] as? String ?? ""
    }
}

/// `homepwner methods [METHOD]`: the method list, or one method's request and response schema.
enum MethodsCommand {
    static let parser = OptionParser(
        command: "methods", summary: "Lists every method, or describes one method's request and response.",
        usage: "homepwner methods [METHOD]", options: [], allowsPositionals: true)

    static func run(_ arguments: [String]) -> Int32 {
        guard let options = HomepwnerCLI.parse(parser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        guard let name = options.positionals.first else {
            for method in ProtoRegistry.allMethods { print(method) }
            return ExitCode.ok
        }
        guard let method = MethodLookup.method(named: name) else {
            printError("homepwner methods: unknown method '\(name)'")
            return ExitCode.usage
        }
        print(method)
        for type in [method.requestType, method.responseType] {
            print("\n\(type):")
            print(SchemaText.describe(message: type) ?? "  (no fields)")
        }
        return ExitCode.ok
    }
}
