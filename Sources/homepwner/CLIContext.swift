import CurveAuth
import RPC
import Runtime
import ZMQ

/// The ZeroMQ context of a command that calls the suite, with its CURVE client keys when
/// given (`--client-secret-key` and `--server-key`, or HOMEPWNER_CLIENT_SECRET_KEY and
/// HOMEPWNER_SERVER_KEY): every socket made in it then speaks CURVE.
enum CLIContext {
    /// The two client options every calling command has.
    static let options: [OptionSpec] = TransportSecurity.options.filter {
        $0.name == "client-secret-key" || $0.name == "server-key"
    }

    /// A new context, with the client keys `options` name installed.
    static func make(_ options: ParsedOptions) throws -> Context {
        let context = try Context()
        if let client = try TransportSecurity.loadClient(options) {
            TransportSecurity(client: client).install(on: context)
        }
        return context
    }
}
