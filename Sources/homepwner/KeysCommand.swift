import CurveAuth
import Foundation
import Runtime
import ZMQ

/// `homepwner keys init|gen|allow|revoke|ls`: CURVE key files and the allowed-keys file;
/// `keys sign-gen` (KeysCommand+Signing.swift): Ed25519 signing key files.
enum KeysCommand {
    static let overview = """
        OVERVIEW: CURVE keys and the allowed-keys file that says which keys may connect, with which role;
        Ed25519 signing keys (what signs backup manifests).

        USAGE:
          homepwner keys init DIR [--owner UID[:GID]]            the suite's keys: server, admin, capture-worker, thumbnail-worker, allowed_keys, metrics.token
          homepwner keys gen NAME [--dir D] [--owner UID[:GID]]  write NAME.key and NAME.key_secret (0600)
          homepwner keys allow ROLE KEYFILE|Z85 [--name N] --file ALLOWED   allow a key as admin, capture-worker, thumbnail-worker, worker or reader
          homepwner keys revoke KEY|NAME --file ALLOWED          remove a key
          homepwner keys ls --file ALLOWED [--json]              list the allowed keys
          homepwner keys sign-gen NAME [--dir D] [--force]       write NAME.sign.pub and NAME.sign.secret (0600): a signing key, not a CURVE key

        The allowed-keys file holds one 'ROLE Z85PUBLICKEY [NAME]' per line, '#' comments allowed.
        Edits replace it atomically: a reader sees the old file or the new one, never half of one.
        --owner gives the secret files processes read to the user a container runs as (10001 in
        compose/Dockerfile); only root may give files away.
        """

    static let fileOption = OptionSpec(name: "file", help: "the allowed-keys file", valueName: "ALLOWED")
    static let ownerOption = OptionSpec(
        name: "owner",
        help: "give the secret key file(s) a service or worker reads to this user (and group), e.g. 10001 for the compose image; needs root",
        valueName: "UID[:GID]")

    static let genParser = OptionParser(
        command: "keys gen", summary: "Writes a new CURVE key pair as NAME.key (public) and NAME.key_secret (mode 0600); never overwrites.",
        usage: "homepwner keys gen NAME [--dir D]",
        options: [
            OptionSpec(name: "dir", defaultValue: ".", help: "the folder to write the files in", valueName: "D"),
            ownerOption,
            OptionSpec(name: "json", help: "print JSON for scripts", isFlag: true),
        ], allowsPositionals: true)

    static let allowParser = OptionParser(
        command: "keys allow", summary: "Allows a public key (from a .key file or given in Z85) with a role; a listed key gets the new role.",
        usage: "homepwner keys allow ROLE KEYFILE|Z85 [--name N] --file ALLOWED",
        options: [
            fileOption,
            OptionSpec(name: "name", help: "a name for the key (default: the key file's name)", valueName: "N"),
            OptionSpec(name: "create", help: "create the allowed-keys file if it does not exist", isFlag: true),
        ], allowsPositionals: true)

    static let initParser = OptionParser(
        command: "keys init",
        summary: "Makes a folder of keys for a suite: server.key/.key_secret (the services' pair), admin.key/.key_secret (your CLI's), "
            + "capture-worker.key/.key_secret and thumbnail-worker.key/.key_secret (one per worker kind, each allowed only its own queue), "
            + "allowed_keys allowing those three, and metrics.token "
            + "(the scrape endpoints' bearer token); never overwrites.",
        usage: "homepwner keys init DIR [--owner UID[:GID]]",
        options: [ownerOption, OptionSpec(name: "json", help: "print JSON for scripts", isFlag: true)], allowsPositionals: true)

    static let revokeParser = OptionParser(
        command: "keys revoke", summary: "Removes a key, given as its Z85 public key or its name.",
        usage: "homepwner keys revoke KEY|NAME --file ALLOWED", options: [fileOption], allowsPositionals: true)

    static let lsParser = OptionParser(
        command: "keys ls", summary: "Lists the allowed keys: role, public key, name.",
        usage: "homepwner keys ls --file ALLOWED [--json]",
        options: [fileOption, OptionSpec(name: "json", help: "print JSON for scripts", isFlag: true)])

    static func run(_ arguments: [String]) async -> Int32 {
        await runSubcommand(of: "keys", overview: overview, names: ["init", "gen", "allow", "revoke", "ls", "sign-gen"], arguments) { subcommand, rest in
            switch subcommand {
            case "init": initialize(rest)
            case "gen": gen(rest)
            case "allow": allow(rest)
            case "revoke": revoke(rest)
            case "ls": ls(rest)
            case "sign-gen": signGen(rest)
            default: nil
            }
        }
    }

    static func gen(_ arguments: [String]) -> Int32 {
        guard let options = HomepwnerCLI.parse(genParser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        guard options.positionals.count == 1, let name = options.positionals.first else {
            return ItemCommand.usageError("keys gen", "expected one NAME")
        }
        guard CurveKeyPair.isValidName(name) else {
            return ItemCommand.usageError("keys gen", "'\(name)' is not a valid name (1-64 of A-Z a-z 0-9 . _ -, not starting with . or -)")
        }
        return failures("keys gen") {
            let owner = try givenOwner(options)
            let keys = try CurveKeyPair.generate()
            let (publicFile, secretFile) = try keys.save(directory: options["dir"] ?? ".", name: name, secretOwner: owner)
            if options.bool("json") {
                print("{\"name\": \(jsonString(name)), \"public_key\": \(jsonString(keys.publicKey)), "
                    + "\"public_file\": \(jsonString(publicFile)), \"secret_file\": \(jsonString(secretFile))}")
            } else {
                print("wrote \(publicFile) (public) and \(secretFile) (secret, mode 0600\(owner.map { ", owner \($0)" } ?? ""))")
                print("public key: \(keys.publicKey)")
            }
        }
    }

    static func initialize(_ arguments: [String]) -> Int32 {
        guard let options = HomepwnerCLI.parse(initParser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        guard options.positionals.count == 1, let directory = options.positionals.first else {
            return ItemCommand.usageError("keys init", "expected one DIR")
        }
        return failures("keys init") {
            let owner = try givenOwner(options)
            let allowed = (directory as NSString).appendingPathComponent("allowed_keys")
            if FileManager.default.fileExists(atPath: allowed) { throw KeyFileError.exists(path: allowed) }
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let server = try CurveKeyPair.generate()
            let admin = try CurveKeyPair.generate()
            // A key per worker kind, each with the role that works only its own queue: a
            // thumbnail worker's key, copied to another machine, cannot take or end captures.
            let captureWorker = try CurveKeyPair.generate()
            let thumbnailWorker = try CurveKeyPair.generate()
            // The services and the workers read their secrets (in a container, as its user); the
            // admin key is the caller's own.
            let serverFiles = try server.save(directory: directory, name: "server", secretOwner: owner)
            let adminFiles = try admin.save(directory: directory, name: "admin")
            let captureFiles = try captureWorker.save(directory: directory, name: "capture-worker", secretOwner: owner)
            let thumbnailFiles = try thumbnailWorker.save(directory: directory, name: "thumbnail-worker", secretOwner: owner)
            // The scrape endpoints' token: the processes read it, and so does Prometheus.
            let tokenFile = (directory as NSString).appendingPathComponent("metrics.token")
            try BearerToken.generate().save(file: tokenFile, owner: owner)
            _ = try AllowedKeys.edit(file: allowed, create: true) { keys in
                try keys.allow(AllowedKey(role: .admin, publicKey: admin.publicKey, name: "admin"))
                try keys.allow(AllowedKey(role: .captureWorker, publicKey: captureWorker.publicKey, name: "capture-worker"))
                try keys.allow(AllowedKey(role: .thumbnailWorker, publicKey: thumbnailWorker.publicKey, name: "thumbnail-worker"))
            }
            if options.bool("json") {
                print("{\"server_public_key\": \(jsonString(server.publicKey)), \"admin_public_key\": \(jsonString(admin.publicKey)), "
                    + "\"capture_worker_public_key\": \(jsonString(captureWorker.publicKey)), "
                    + "\"thumbnail_worker_public_key\": \(jsonString(thumbnailWorker.publicKey)), \"allowed_keys\": \(jsonString(allowed)), "
                    + "\"metrics_token_file\": \(jsonString(tokenFile))}")
                return
            }
            let given = owner.map { " (owner \($0))" } ?? ""
            print("""
                wrote \(serverFiles.secretFile)\(given) and \(serverFiles.publicFile) (the services' key pair)
                wrote \(adminFiles.secretFile) and \(adminFiles.publicFile) (your admin key)
                wrote \(captureFiles.secretFile)\(given) and \(captureFiles.publicFile) (capture workers' key)
                wrote \(thumbnailFiles.secretFile)\(given) and \(thumbnailFiles.publicFile) (thumbnail workers' key)
                wrote \(allowed) (admin, capture-worker and thumbnail-worker allowed)
                wrote \(tokenFile)\(given) (the bearer token scrapes of /metrics present)
                serve:            --server-secret-key \(serverFiles.secretFile) --allowed-keys \(allowed)
                call:             --client-secret-key \(adminFiles.secretFile) --server-key \(serverFiles.publicFile)
                capture-worker:   --client-secret-key \(captureFiles.secretFile) --server-key \(serverFiles.publicFile)
                thumbnail-worker: --client-secret-key \(thumbnailFiles.secretFile) --server-key \(serverFiles.publicFile)
                metrics:          --metrics-token-file \(tokenFile) (scrape with 'Authorization: Bearer' and its text)
                more:             homepwner keys gen NAME --dir \(directory), then homepwner keys allow ROLE \((directory as NSString).appendingPathComponent("NAME.key")) --file \(allowed)
                """)
        }
    }

    /// `--owner UID[:GID]`, nil when not given; a usage failure (before anything is written)
    /// when it is not numbers or this process may not give files to it.
    static func givenOwner(_ options: ParsedOptions) throws -> FileOwner? {
        guard let text = options["owner"], !text.isEmpty else { return nil }
        guard let owner = FileOwner(parsing: text) else {
            throw CLIFailure(code: ExitCode.usage, message: "--owner '\(text)' is not UID or UID:GID (numbers, e.g. 10001)")
        }
        guard owner.isGrantable else {
            throw CLIFailure(
                code: ExitCode.usage, message: "--owner \(owner): only root may give files to another user; run it as root (sudo), nothing was written")
        }
        return owner
    }

    static func allow(_ arguments: [String]) -> Int32 {
        guard let options = HomepwnerCLI.parse(allowParser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        guard let file = options["file"] else { return ItemCommand.usageError("keys allow", "--file ALLOWED is required") }
        guard options.positionals.count == 2 else { return ItemCommand.usageError("keys allow", "expected ROLE and KEYFILE or a Z85 key") }
        guard let role = Role(rawValue: options.positionals[0]) else {
            return ItemCommand.usageError("keys allow", "unknown role '\(options.positionals[0])' (expected \(Role.spelledOut))")
        }
        let source = options.positionals[1]
        return failures("keys allow") {
            var name = options["name"]
            let publicKey: String
            if FileManager.default.fileExists(atPath: source) {
                publicKey = try CurveKeyPair.loadPublicKey(file: source)
                if name == nil {
                    // The certificate's file name, as `keys gen` wrote it.
                    var base = (source as NSString).lastPathComponent
                    for suffix in [".key_secret", ".key"] where base.hasSuffix(suffix) { base.removeLast(suffix.count); break }
                    if CurveKeyPair.isValidName(base) { name = base }
                }
            } else if Z85.isCurveKey(source) {
                publicKey = source
            } else {
                throw CLIFailure(code: ExitCode.usage, message: "'\(source)' is neither a key file nor a 40-character Z85 public key")
            }
            let entry = AllowedKey(role: role, publicKey: publicKey, name: name)
            let outcome = try AllowedKeys.edit(file: file, create: options.bool("create")) { keys in try keys.allow(entry) }
            let label = name.map { " (\($0))" } ?? ""
            switch outcome {
            case .added: print("allowed \(publicKey)\(label) as \(role.rawValue)")
            case .changed(let old): print("changed \(publicKey)\(label): \(old.role.rawValue) → \(role.rawValue)")
            case .unchanged: print("\(publicKey)\(label) is already allowed as \(role.rawValue)")
            }
        }
    }

    static func revoke(_ arguments: [String]) -> Int32 {
        guard let options = HomepwnerCLI.parse(revokeParser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        guard let file = options["file"] else { return ItemCommand.usageError("keys revoke", "--file ALLOWED is required") }
        guard options.positionals.count == 1, let target = options.positionals.first else {
            return ItemCommand.usageError("keys revoke", "expected one KEY or NAME")
        }
        return failures("keys revoke") {
            let removed = try AllowedKeys.edit(file: file) { keys in keys.revoke(target) }
            guard !removed.isEmpty else {
                throw CLIFailure(code: ExitCode.notFound, message: "no key or name '\(target)' in \(file)")
            }
            for entry in removed {
                print("revoked \(entry.publicKey)\(entry.name.map { " (\($0))" } ?? "") (was \(entry.role.rawValue))")
            }
        }
    }

    static func ls(_ arguments: [String]) -> Int32 {
        guard let options = HomepwnerCLI.parse(lsParser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        guard let file = options["file"] else { return ItemCommand.usageError("keys ls", "--file ALLOWED is required") }
        return failures("keys ls") {
            let entries = try AllowedKeys.load(file: file).entries
            if options.bool("json") {
                let items = entries.map { entry in
                    "{\"role\": \"\(entry.role.rawValue)\", \"public_key\": \(jsonString(entry.publicKey)), \"name\": "
                        + (entry.name.map(jsonString) ?? "null") + "}"
                }
                print("[" + items.joined(separator: ", ") + "]")
            } else if entries.isEmpty {
                print("no keys allowed in \(file)")
            } else {
                printColumns([["ROLE", "PUBLIC KEY", "NAME"]] + entries.map { [$0.role.rawValue, $0.publicKey, $0.name ?? "-"] })
            }
        }
    }

    /// A failure with its own exit code.
    struct CLIFailure: Error {
        let code: Int32
        let message: String
    }

    /// Runs `body`; prints what went wrong and returns the exit code: 6 for a file that would be
    /// overwritten, 3 for a bad file or key, 1 for other errors.
    static func failures(_ command: String, _ body: () throws -> Void) -> Int32 {
        do {
            try body()
            return ExitCode.ok
        } catch {
            if let failure = error as? CLIFailure {
                printError("homepwner \(command): \(failure.message)")
                return failure.code
            }
            printError("homepwner \(command): \(error)")
            if let error = error as? KeyFileError {
                switch error {
                case .exists: return ExitCode.conflict
                case .insecureMode, .malformed, .unsafe: return ExitCode.invalid
                case .io: return ExitCode.failure
                }
            }
            if error is AllowedKeysError { return ExitCode.invalid }
            return ExitCode.failure
        }
    }
}
