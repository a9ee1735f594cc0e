import Foundation
import Proto
import RPC
import Runtime
import ZMQ

/// `homepwner watch`: prints the services' events as they happen (item.*, image.*, job.*,
/// location.*, category.*, policy.*).
enum WatchCommand {
    static let parser = OptionParser(
        command: "watch",
        summary: "Subscribes to the event sockets and prints each event; Ctrl-C stops. Events are best effort.",
        usage: "homepwner watch [TOPIC-PREFIX ...] [options]",
        options: [
            OptionSpec(name: "item-events", env: EnvironmentNames.itemEvents, defaultValue: Defaults.itemEvents,
                       help: "item-service event endpoint", valueName: "ENDPOINT"),
            OptionSpec(name: "image-events", env: EnvironmentNames.imageEvents, defaultValue: Defaults.imageEvents,
                       help: "image-service event endpoint", valueName: "ENDPOINT"),
            OptionSpec(name: "count", env: nil, defaultValue: "0", help: "stop after N events (0 = never)", valueName: "N"),
            OptionSpec(name: "json", env: nil, defaultValue: nil, help: "one JSON object per line", isFlag: true),
        ] + CLIContext.options,
        allowsPositionals: true)

    /// The event message type of each topic family.
    static func messageType(of topic: String) -> String? {
        if topic.hasPrefix("item.") { return ItemEvent.protoName }
        if topic.hasPrefix("image.") { return ImageEvent.protoName }
        if topic.hasPrefix("job.") { return JobEvent.protoName }
        if topic.hasPrefix("location.") { return LocationEvent.protoName }
        if topic.hasPrefix("category.") { return CategoryEvent.protoName }
        if topic.hasPrefix("policy.") { return PolicyEvent.protoName }
        return nil
    }

    static func run(_ arguments: [String]) async -> Int32 {
        guard let options = HomepwnerCLI.parse(parser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        let json = options.bool("json")
        do {
            let limit = try options.int("count")
            let context = try CLIContext.make(options)
            let socket = try Socket(context, .sub)
            defer { socket.close() }
            try TransportSecurity.of(context)?.secureClient(socket)
            let prefixes = options.positionals.isEmpty ? [""] : options.positionals
            for prefix in prefixes { try socket.subscribe(Array(prefix.utf8)) }
            try socket.connect(try options.string("item-events"))
            try socket.connect(try options.string("image-events"))
            var seen = 0
            // A plain blocking loop: this command has nothing else to do.
            while limit == 0 || seen < limit {
                guard let frames = try socket.receive(), frames.count == 2 else { continue }
                let topic = String(decoding: frames[0], as: UTF8.self)
                // Unbuffered, so a pipe sees each event as it comes.
                FileHandle.standardOutput.write(Data((line(topic: topic, body: frames[1], json: json) + "\n").utf8))
                seen += 1
            }
            return ExitCode.ok
        } catch {
            printError("homepwner watch: \(error)")
            return ExitCode.failure
        }
    }

    static func line(topic: String, body: [UInt8], json: Bool) -> String {
        guard let type = messageType(of: topic),
            let event = try? ProtoJSON.decode(body, as: type, options: .init(emitDefaults: false, prettyPrinted: false))
        else {
            return json
                ? "{\"topic\": \(jsonString(topic)), \"bytes\": \(body.count)}"
                : "\(topic)  (\(body.count) bytes, unknown event type)"
        }
        return json ? "{\"topic\": \(jsonString(topic)), \"event\": \(event)}" : "\(topic)  \(event)"
    }
}
