// thumbnail-worker: the thin main of ServiceProgram.thumbnailWorker (also run as
// "homepwner NAME" and by a link named NAME to the homepwner executable).
import ThumbnailWorker
import RPC

await ServiceProgram.thumbnailWorker.main(Array(CommandLine.arguments.dropFirst()))
