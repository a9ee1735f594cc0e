// homepwner: the admin CLI. Every RPC as a subcommand; `homepwner up` runs the suite.
import Runtime

// As the services do (ProcessRunner): photos pass through here too, whole.
MallocTuning.forLargeMessages()
// `homepwner up` is the whole suite in one process: its freed heap goes back as the services' does.
MallocTuning.startTrimming()
await HomepwnerCLI.main(Array(CommandLine.arguments.dropFirst()))
