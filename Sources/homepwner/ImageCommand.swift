/// `homepwner image …`: the image service's subcommands (issue: image service).
enum ImageCommand {
    static func run(_ arguments: [String]) async -> Int32 {
        printError("homepwner image: not available yet (the image service is being built)")
        return ExitCode.failure
    }
}

/// `homepwner cache …`: the image cache's subcommands (issue: image service).
enum CacheCommand {
    static func run(_ arguments: [String]) async -> Int32 {
        printError("homepwner cache: not available yet (the image service is being built)")
        return ExitCode.failure
    }
}
