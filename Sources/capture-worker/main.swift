// capture-worker: the thin main of ServiceProgram.captureWorker (also run as
// "homepwner NAME" and by a link named NAME to the homepwner executable).
import CaptureWorker
import RPC

await ServiceProgram.captureWorker.main(Array(CommandLine.arguments.dropFirst()))
