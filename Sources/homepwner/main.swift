// homepwner: the admin CLI. Every RPC as a subcommand; `homepwner up` runs the suite.
import Runtime

// As the services do (ProcessRunner): photos pass through here too, whole.
MallocTuning.forLargeMessages()
await HomepwnerCLI.main(Array(CommandLine.arguments.dropFirst()))
