import Runtime
import ZMQ

/// One of the suite's long-running programs (item-service, image-service, capture-worker,
/// thumbnail-worker): its name, summary and options, and the composition it runs.
///
/// Each is run three ways, all by `main`: by its own executable (the thin mains under
/// Sources/), as `homepwner NAME …`, and by a link named NAME to the `homepwner` executable
/// (what `ops/install` and the Docker image install: one copy of the code for all five commands).
public struct ServiceProgram: Sendable {
    /// The name it is run by, and its log label: "item-service".
    public let command: String
    /// One line on what it does, its `--help` overview.
    public let summary: String
    /// Its own options (the metrics and common options are added by `ProcessRunner`).
    public let options: [OptionSpec]
    /// The environment variable `--metrics` is read from.
    public let metricsEnvironment: String
    private let makeComposition: @Sendable (ParsedOptions, Context, Logger) throws -> ServiceComposition

    /// A program named `command` whose process runs what `makeComposition` builds.
    public init(
        command: String, summary: String, options: [OptionSpec], metricsEnvironment: String,
        makeComposition: @escaping @Sendable (ParsedOptions, Context, Logger) throws -> ServiceComposition
    ) {
        self.command = command
        self.summary = summary
        self.options = options
        self.metricsEnvironment = metricsEnvironment
        self.makeComposition = makeComposition
    }

    /// The parser of its command line (what `--help` prints, the man page and completions list).
    public var parser: OptionParser {
        ProcessRunner.parser(command: command, summary: summary, options: options, metricsEnvironment: metricsEnvironment)
    }

    /// Runs it with `arguments` (the command line after its name) until SIGTERM/SIGINT;
    /// never returns (`ProcessRunner.run`).
    public func main(_ arguments: [String]) async -> Never {
        await ProcessRunner.run(
            command: command, summary: summary, options: options, metricsEnvironment: metricsEnvironment, arguments: arguments,
            makeComposition: makeComposition)
    }
}
