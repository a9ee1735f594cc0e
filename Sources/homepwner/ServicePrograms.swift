import CaptureWorker
import ImageService
import ItemService
import RPC
import ThumbnailWorker

/// The four long-running programs this one executable also is (issue 31, item 5): run as
/// `homepwner item-service …`, or by a link named `item-service` to it (what `ops/install` and
/// the Docker image install), exactly as their own executables run them.
enum ServicePrograms {
    /// Each program's name, in the order the CLI lists them, and how to get it: only the program
    /// asked for is built, so a service started by its link runs none of the others' code at
    /// start-up.
    private static let table: [(name: String, program: @Sendable () -> ServiceProgram)] = [
        ("item-service", { .itemService }), ("image-service", { .imageService }),
        ("capture-worker", { .captureWorker }), ("thumbnail-worker", { .thumbnailWorker }),
    ]

    /// Every program (their options built: for the help, the man page and completions).
    static var all: [ServiceProgram] { table.map { $0.program() } }

    /// The program called `name` (a first argument, or the last part of the path this executable
    /// was run by); nil for "homepwner" and anything else.
    static func named(_ name: String) -> ServiceProgram? {
        table.first { $0.name == name }?.program()
    }

    /// The program a path names by its last component: "/usr/local/bin/image-service".
    static func calledAs(_ path: String) -> ServiceProgram? {
        named(String(path.split(separator: "/").last ?? ""))
    }
}
