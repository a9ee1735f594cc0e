import CurveAuth
import Runtime
import Signing

/// `homepwner keys sign-gen`: an Ed25519 signing key pair (libsodium), the key that signs
/// backup manifests; apart from CURVE keys, which encrypt and authenticate connections.
extension KeysCommand {
    static let signGenParser = OptionParser(
        command: "keys sign-gen",
        summary: "Writes a new Ed25519 signing key pair (the key that signs backup manifests) as NAME.sign.pub (public: "
            + "give it to whoever verifies) and NAME.sign.secret (mode 0600), and prints its fingerprint; "
            + "never overwrites unless --force. Not a CURVE key: it cannot connect to a service.",
        usage: "homepwner keys sign-gen NAME [--dir D] [--force] [--owner UID[:GID]] [--json]",
        options: [
            OptionSpec(name: "dir", defaultValue: ".", help: "the folder to write the files in (it must exist)", valueName: "D"),
            OptionSpec(name: "force", help: "replace NAME.sign.pub and NAME.sign.secret if they exist (what the old key signed no longer verifies with the new one)", isFlag: true),
            OptionSpec(
                name: "owner", help: "give NAME.sign.secret to this user (and group), e.g. 10001 for the compose image; needs root",
                valueName: "UID[:GID]"),
            OptionSpec(name: "json", help: "print JSON for scripts", isFlag: true),
        ], allowsPositionals: true)

    static func signGen(_ arguments: [String]) -> Int32 {
        guard let options = HomepwnerCLI.parse(signGenParser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        guard options.positionals.count == 1, let name = options.positionals.first else {
            return ItemCommand.usageError("keys sign-gen", "expected one NAME")
        }
        guard CurveKeyPair.isValidName(name) else {
            return ItemCommand.usageError("keys sign-gen", "'\(name)' is not a valid name (1-64 of A-Z a-z 0-9 . _ -, not starting with . or -)")
        }
        return failures("keys sign-gen") {
            let owner = try givenOwner(options)
            let keys = SigningKeyPair.generate()
            let saved: (publicFile: String, secretFile: String)
            do {
                saved = try keys.save(directory: options["dir"] ?? ".", name: name, replace: options.bool("force"), secretOwner: owner)
            } catch KeyFileError.exists(let path) {
                throw CLIFailure(
                    code: ExitCode.conflict,
                    message: "\(path) already exists; refusing to overwrite it (move it away, or pass --force to replace "
                        + "the key pair: what the old key signed then no longer verifies with the new one)")
            }
            let (publicFile, secretFile) = saved
            if options.bool("json") {
                print("{\"name\": \(jsonString(name)), \"fingerprint\": \(jsonString(keys.fingerprint)), "
                    + "\"public_key\": \(jsonString(keys.publicKey.base64)), "
                    + "\"public_file\": \(jsonString(publicFile)), \"secret_file\": \(jsonString(secretFile))}")
            } else {
                print("wrote \(secretFile) (secret, mode 0600\(owner.map { ", owner \($0)" } ?? "")) and \(publicFile) (public)")
                print("fingerprint: \(keys.fingerprint)")
            }
        }
    }
}
