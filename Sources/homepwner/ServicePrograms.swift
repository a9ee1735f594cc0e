import CaptureWorker
import ImageService
import ItemService
import RPC
import ThumbnailWorker

/// The four long-running programs this one executable also is (issue 31, item 5): run as
/// `homepwner item-service …`, or by a link named `item-service` to it (what `ops/install` and
/// the Docker image install), exactly as their own executables run them.
enum ServicePrograms {
    /// Their names, in the order the CLI lists them.
    static let names = ["item-service", "image-service", "capture-worker", "thumbnail-worker"]

    /// Every program (their options built: for the help, the man page and completions).
    static var all: [ServiceProgram] { names.compactMap(named) }

    /// The program called `name` (a first argument, or the last part of the path this executable
    /// was run by); nil for "homepwner" and anything else. Only that program is built: a service
    /// started by its link runs none of the others' code (its idle memory stays what its own
    /// executable's was).
    static func named(_ name: String) -> ServiceProgram? {
        switch name {
        case "item-service": .itemService
        case "image-service": .imageService
        case "capture-worker": .captureWorker
        case "thumbnail-worker": .thumbnailWorker
        default: nil
        }
    }

    /// The program a path names by its last component: "/usr/local/bin/image-service".
    static func calledAs(_ path: String) -> ServiceProgram? {
        named(String(path.split(separator: "/").last ?? ""))
    }
}
