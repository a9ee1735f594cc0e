// item-service: the thin main of ServiceProgram.itemService (also run as
// "homepwner NAME" and by a link named NAME to the homepwner executable).
import ItemService
import RPC

await ServiceProgram.itemService.main(Array(CommandLine.arguments.dropFirst()))
