import CurveAuth
import Foundation
import Runtime
import Locking
import ZMQ

/// A process's CURVE keys, kept with its ZeroMQ context (`install(on:)`) so that every RPC
/// server, RPC client and event socket made in that context uses them (docs/protocol.md, §16).
///
/// - As a server (`server`): every ROUTER and PUB socket is a CURVE server with the suite's
///   secret key; libzmq hands each handshake to the context's ZAP handler, which admits only
///   the keys of the allowed-keys file, and ZAP_ENFORCE_DOMAIN makes a missing handler refuse
///   everyone. Each message's User-Id (the client's key) is checked again against the file,
///   so a key revoked while connected is refused on its next call.
/// - As a client (`client`): every DEALER and SUB socket is a CURVE client with the process's
///   own key pair and the server's public key. A server without a client key of its own calls
///   with the server key pair, which its peers admit as admin.
/// - Without server keys a process serves loopback, ipc and inproc only: any other bind is
///   refused at start, unless `insecure`, and then each start logs that it serves without
///   authentication.
public final class TransportSecurity: Sendable {
    /// What a serving process needs.
    public struct Server: Sendable {
        /// The servers' key pair (their public key is what clients name as the server key).
        public let keyPair: CurveKeyPair
        /// The allowed client keys, with their roles; reloaded on change and on SIGHUP.
        public let keys: KeyTable

        public init(keyPair: CurveKeyPair, keys: KeyTable) {
            self.keyPair = keyPair
            self.keys = keys
        }
    }

    /// What a calling process needs.
    public struct Client: Sendable {
        /// This process's own key pair; its public key must be in the servers' allowed keys.
        public let keyPair: CurveKeyPair
        /// The servers' public key (Z85).
        public let serverKey: String

        public init(keyPair: CurveKeyPair, serverKey: String) {
            self.keyPair = keyPair
            self.serverKey = serverKey
        }
    }

    /// The ZAP domain the servers send: fixed, since only it is enforced.
    public static let zapDomain = "homepwner"

    public let server: Server?
    public let client: Client?
    /// Whether non-loopback binds without keys are allowed (`--insecure`).
    public let insecure: Bool

    public init(server: Server? = nil, client: Client? = nil, insecure: Bool = false) {
        self.server = server
        self.client = client
        self.insecure = insecure
    }

    /// The security kept with `context`, if any was installed.
    public static func of(_ context: Context) -> TransportSecurity? {
        context.attachment as? TransportSecurity
    }

    /// Makes every socket the RPC layer creates in `context` from now on use these keys.
    public func install(on context: Context) {
        context.attachment = self
    }

    // MARK: Sockets

    /// Sets a serving socket (ROUTER, PUB) up as a CURVE server; call before bind.
    func secureServer(_ socket: Socket) throws {
        guard let server else { return }
        try socket.setZAPDomain(Self.zapDomain)
        try socket.setZAPEnforceDomain(true)
        try socket.setCurveServer(secretKey: server.keyPair.secretKey)
    }

    /// Sets a calling socket (DEALER, SUB) up as a CURVE client; call before connect.
    public func secureClient(_ socket: Socket) throws {
        guard let client else { return }
        try socket.setCurveClient(
            serverKey: client.serverKey, publicKey: client.keyPair.publicKey, secretKey: client.keyPair.secretKey)
    }

    /// Refuses to serve `endpoints` when one of them is reachable from other machines and there
    /// are no server keys (unless `insecure`, which is logged instead).
    static func checkEndpoints(
        _ endpoints: [String], process: String, security: TransportSecurity?, logger: Logger
    ) throws {
        guard security?.server == nil else { return }
        let open = endpoints.filter { !isLocal($0) }
        guard !open.isEmpty else { return }
        if security?.insecure == true {
            logger.warning(
                "serving WITHOUT authentication or encryption (--insecure): anyone who reaches these endpoints can read and change everything",
                ["endpoints": open.joined(separator: ",")])
            return
        }
        throw RPCError.failedPrecondition(
            "\(process): refusing to bind \(open.joined(separator: ", ")) without CURVE keys: anyone who reaches "
                + "it could read and change every item and photo. Make keys with `homepwner keys init DIR` and "
                + "pass --server-secret-key DIR/server.key_secret --allowed-keys DIR/allowed_keys "
                + "(\(EnvironmentNames.serverSecretKey), \(EnvironmentNames.allowedKeys)); or bind a loopback "
                + "address (tcp://127.0.0.1:PORT) or ipc://; or pass --insecure "
                + "(\(EnvironmentNames.insecure)=1) to serve unauthenticated on a network you trust")
    }

    /// Whether `endpoint` is reachable from this machine only: ipc, inproc, or TCP on a
    /// loopback address (127.0.0.0/8, ::1, localhost, the `lo` interface).
    public static func isLocal(_ endpoint: String) -> Bool {
        if endpoint.hasPrefix("ipc://") || endpoint.hasPrefix("inproc://") { return true }
        guard endpoint.hasPrefix("tcp://") else { return false }
        let address = endpoint.dropFirst("tcp://".count)
        let host: Substring
        if address.hasPrefix("[") {
            guard let close = address.firstIndex(of: "]") else { return false }
            host = address[address.index(after: address.startIndex)..<close]
        } else {
            guard let colon = address.lastIndex(of: ":") else { return false }
            host = address[..<colon]
        }
        if host == "localhost" || host == "lo" || host == "::1" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
    }

    // MARK: Options

    /// The flags every process (and `homepwner up`) reads.
    public static let options: [OptionSpec] = [
        OptionSpec(
            name: "server-secret-key", env: EnvironmentNames.serverSecretKey, defaultValue: nil,
            help: "serve with CURVE: the servers' secret key file (homepwner keys init/gen); needs --allowed-keys",
            valueName: "FILE"),
        OptionSpec(
            name: "allowed-keys", env: EnvironmentNames.allowedKeys, defaultValue: nil,
            help: "the allowed-keys file (ROLE KEY [NAME] per line); reloaded on change and on SIGHUP",
            valueName: "FILE"),
        OptionSpec(
            name: "client-secret-key", env: EnvironmentNames.clientSecretKey, defaultValue: nil,
            help: "call other services with CURVE: this process's secret key file; needs --server-key",
            valueName: "FILE"),
        OptionSpec(
            name: "server-key", env: EnvironmentNames.serverKey, defaultValue: nil,
            help: "the servers' public key: a .key file or the Z85 key", valueName: "FILE|Z85"),
        OptionSpec(
            name: "insecure", env: EnvironmentNames.insecure, defaultValue: nil,
            help: "allow binding non-loopback addresses without CURVE keys (logged at every start)", isFlag: true),
    ]

    /// The keys the parsed options name (nil when none are given and not --insecure); throws
    /// when a file is missing, unreadable, too open, or a flag comes without its partner.
    public static func load(_ options: ParsedOptions, logger: Logger) throws -> TransportSecurity? {
        let value = { nonEmpty(options, $0) }
        var server: Server?
        switch (value("server-secret-key"), value("allowed-keys")) {
        case (nil, nil):
            break
        case (let secret?, let allowed?):
            let keyPair = try CurveKeyPair.load(secretFile: secret)
            // The servers call each other with their own key (item-service's delete cascade to
            // the image service): it is admin, as whoever holds it could pose as a server anyway.
            let own = AllowedKey(role: .admin, publicKey: keyPair.publicKey, name: "server")
            server = Server(keyPair: keyPair, keys: try KeyTable(file: allowed, logger: logger, implicitKeys: [own]))
        case (nil, _?):
            throw OptionError.invalidValue(
                option: "--allowed-keys", value: value("allowed-keys")!,
                reason: "needs --server-secret-key (\(EnvironmentNames.serverSecretKey)) too: the servers' own key")
        case (_?, nil):
            throw OptionError.invalidValue(
                option: "--server-secret-key", value: value("server-secret-key")!,
                reason: "needs --allowed-keys (\(EnvironmentNames.allowedKeys)) too: who may connect")
        }
        var client = try loadClient(options)
        if client == nil, let server {
            // A server's own calls (to the other service) go with the server key.
            client = Client(keyPair: server.keyPair, serverKey: server.keyPair.publicKey)
        }
        let insecure = options.bool("insecure")
        guard server != nil || client != nil || insecure else { return nil }
        return TransportSecurity(server: server, client: client, insecure: insecure)
    }

    /// The client keys the parsed options name (`--client-secret-key`, `--server-key`); nil when
    /// neither is given.
    public static func loadClient(_ options: ParsedOptions) throws -> Client? {
        try loadClient(secretFile: nonEmpty(options, "client-secret-key"), serverKey: nonEmpty(options, "server-key"))
    }

    /// An option's value, nil when unset or empty (an empty variable means "not given").
    private static func nonEmpty(_ options: ParsedOptions, _ name: String) -> String? {
        guard let text = options[name], !text.isEmpty else { return nil }
        return text
    }

    /// A client's keys from its secret key file and the server key (a file or Z85); nil when
    /// neither is given.
    public static func loadClient(secretFile: String?, serverKey: String?) throws -> Client? {
        switch (secretFile, serverKey) {
        case (nil, nil):
            return nil
        case (let secret?, let server?):
            return Client(keyPair: try CurveKeyPair.load(secretFile: secret), serverKey: try publicKey(server))
        case (nil, let server?):
            throw OptionError.invalidValue(
                option: "--server-key", value: server,
                reason: "needs --client-secret-key (\(EnvironmentNames.clientSecretKey)) too: this client's own key")
        case (let secret?, nil):
            throw OptionError.invalidValue(
                option: "--client-secret-key", value: secret,
                reason: "needs --server-key (\(EnvironmentNames.serverKey)) too: the servers' public key")
        }
    }

    /// A public key given as a Z85 string or as a certificate file.
    static func publicKey(_ text: String) throws -> String {
        Z85.isCurveKey(text) && !FileManager.default.fileExists(atPath: text)
            ? text : try CurveKeyPair.loadPublicKey(file: text)
    }

    // MARK: Lifecycle

    /// The services a process with these keys runs before its servers: the ZAP handler, the
    /// allowed-keys file's watcher, and its SIGHUP reload. Empty without server keys.
    public func services(context: Context, logger: Logger) -> [any LifecycleService] {
        guard let server else { return [] }
        return [
            ZAPAuthenticator(context: context, keys: server.keys, logger: logger),
            server.keys.watcher(),
            ReloadOnHangUp(keys: server.keys, logger: logger),
        ]
    }
}

/// Reloads the allowed keys on SIGHUP.
final class ReloadOnHangUp: LifecycleService {
    let name = "allowed-keys-sighup"
    private let keys: KeyTable
    private let logger: Logger
    private let task = Locked<Task<Void, Never>?>(nil)

    init(keys: KeyTable, logger: Logger) {
        self.keys = keys
        self.logger = logger
    }

    func start() throws {
        // Registered before start() returns, so a SIGHUP sent once the process is up is seen.
        let signals = UnixSignals.stream([SIGHUP])
        task.withLock {
            $0 = Task { [keys, logger] in
                for await _ in signals {
                    logger.info("SIGHUP: reloading the allowed keys", ["file": keys.file])
                    keys.reload()
                }
            }
        }
    }

    func stop() {
        task.withLock { task in
            task?.cancel()
            task = nil
        }
    }
}
