// image-service: the thin main of ServiceProgram.imageService (also run as
// "homepwner NAME" and by a link named NAME to the homepwner executable).
import ImageService
import RPC

await ServiceProgram.imageService.main(Array(CommandLine.arguments.dropFirst()))
