/// `homepwner item …`: the item service's subcommands (issue: item service).
enum ItemCommand {
    static func run(_ arguments: [String]) async -> Int32 {
        printError("homepwner item: not available yet (the item service is being built)")
        return ExitCode.failure
    }
}
