// homepwner: the admin CLI. Every RPC as a subcommand; `homepwner up` runs the suite.
await HomepwnerCLI.main(Array(CommandLine.arguments.dropFirst()))
