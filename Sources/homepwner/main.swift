// homepwner: the admin CLI. Every RPC as a subcommand; `homepwner up` runs the suite. One
// executable for all five commands: run by a link named item-service (image-service,
// capture-worker, thumbnail-worker) it is that program (ServicePrograms).
import Runtime

let arguments = CommandLine.arguments
if let program = arguments.first.flatMap(ServicePrograms.calledAs) {
    await program.main(Array(arguments.dropFirst()))
}
// As the services do (ProcessRunner): photos pass through here too, whole.
MallocTuning.forLargeMessages()
await HomepwnerCLI.main(Array(arguments.dropFirst()))
