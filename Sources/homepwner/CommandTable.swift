import Runtime

/// Every command and subcommand's parser, in one list: what shell completions and the man page
/// are generated from (`homepwner completions`, `homepwner man`). A parser's `command`
/// ("item photo add") is its path. A test runs `homepwner PATH --help` for each entry and checks
/// it prints this parser's help, so the table cannot drift from what the CLI dispatches.
enum CommandTable {
    static let parsers: [OptionParser] = [
        UpCommand.parser, HealthCommand.parser, StatsCommand.parser, CallCommand.parser, MethodsCommand.parser,
        ItemCommand.addParser, ItemListCommand.parser, ItemCommand.showParser, ItemCommand.editParser, ItemCommand.removeParser,
        ItemCommand.moveParser, ItemCommand.statsParser,
        ItemPhotoCommand.addParser, ItemPhotoCommand.removeParser, ItemPhotoCommand.primaryParser, ItemPhotoCommand.orderParser,
        ItemPhotoCommand.roleParser,
        LocationCommand.addParser, LocationCommand.listParser, LocationCommand.showParser, LocationCommand.moveParser,
        LocationCommand.editParser, LocationCommand.removeParser,
        CategoryCommand.addParser, CategoryCommand.listParser, CategoryCommand.editParser, CategoryCommand.removeParser,
        PolicyCommand.showParser, PolicyCommand.setParser,
        ReportCommand.claimParser, ReportCommand.readinessParser, ReportCommand.valueParser,
        ImagePutCommand.parser, ImageGetCommand.parser, ImageCommand.listParser, ImageCommand.statParser, ImageCommand.removeParser,
        ImageRenditionCommand.parser,
        CacheCommand.statsParser, CacheCommand.purgeParser,
        QueueCommand.statsParser, QueueJobsCommand.listParser, QueueJobsCommand.deadParser, QueueJobsCommand.showParser,
        QueueCommand.retryParser, QueueCommand.pauseParser, QueueCommand.resumeParser, QueueCommand.purgeParser,
        QueueBatchCommand.parser,
        ThumbsCommand.batchParser,
        CaptureCommand.captureParser, CaptureCommand.sourcesParser, CaptureCommand.statusParser, CaptureCommand.saveParser,
        WatchCommand.parser, FsckCommand.parser, HistoryCommand.historyParser, HistoryCommand.verifyParser,
        BackupCommand.parser, RestoreCommand.parser, ExportCommand.parser, ImportCommand.parser,
        KeysCommand.genParser, KeysCommand.allowParser, KeysCommand.initParser, KeysCommand.revokeParser, KeysCommand.lsParser,
        KeysCommand.signGenParser,
        CompletionsCommand.parser, CompletionsCommand.manParser,
    ] + ServicePrograms.all.map(\.parser)

    /// One word of the command line: a command, or a subcommand under one.
    struct Node {
        var path: [String]
        /// The command's summary from `HomepwnerCLI.commands`, or the parser's.
        var summary: String
        /// The parser run at this path, if any (`item` alone has none; `capture` has one and subcommands).
        var parser: OptionParser?
        var children: [String] = []
    }

    /// Every path and every prefix of one, keyed by the words joined with spaces ("" is the root).
    static var tree: [String: Node] {
        var nodes: [String: Node] = ["": Node(path: [], summary: "Homepwner admin CLI")]
        let summaries = Dictionary(HomepwnerCLI.commands.map { ($0.name, $0.summary) }, uniquingKeysWith: { first, _ in first })
        for command in HomepwnerCLI.commands {
            nodes[""]!.children.append(command.name)
            nodes[command.name] = Node(path: [command.name], summary: command.summary)
        }
        for parser in parsers {
            let path = words(parser)
            for depth in 1...path.count {
                let key = path.prefix(depth).joined(separator: " ")
                let parent = path.prefix(depth - 1).joined(separator: " ")
                if nodes[key] == nil {
                    nodes[key] = Node(path: Array(path.prefix(depth)), summary: depth == 1 ? summaries[path[0]] ?? parser.summary : "")
                    if !(nodes[parent]?.children.contains(path[depth - 1]) ?? true) { nodes[parent]!.children.append(path[depth - 1]) }
                }
            }
            let key = path.joined(separator: " ")
            nodes[key]!.parser = parser
            if path.count > 1 || nodes[key]!.summary.isEmpty { nodes[key]!.summary = parser.summary }
        }
        for (key, choices) in positionalChoices {
            for choice in choices {
                nodes[key]!.children.append(choice)
                nodes[key + " " + choice] = Node(path: key.split(separator: " ").map(String.init) + [choice], summary: "")
            }
        }
        return nodes
    }

    /// Positionals that are one of a few words, completed like subcommands.
    static let positionalChoices: [String: [String]] = ["completions": ["bash", "zsh", "fish"]]

    static func words(_ parser: OptionParser) -> [String] {
        parser.command.split(separator: " ").map(String.init)
    }

    /// Whether an option's value is a path, so the shell completes file names for it.
    static func takesPath(_ option: OptionSpec) -> Bool {
        !option.isFlag && ["FILE", "DIR", "D", "PATH", "FOLDER", "FILE|Z85"].contains(option.valueName)
    }
}
