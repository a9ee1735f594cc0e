import CurveAuth
import Foundation

extension FuzzTarget {
    /// An allowed-keys file as KeyTable reads it (UTF-8 text, `AllowedKeys(parsing:)`): a bad
    /// line is named by its number; what parses reads back the same once written, once saved
    /// with CRLF line ends, and after an edit (`allow`, `revoke`) that keeps the other lines.
    static let allowedKeys = FuzzTarget(
        name: "allowed-keys",
        summary: "the allowed-keys file parser and its edits (AllowedKeys)",
        maxLength: 4096
    ) { input, outcome in
        guard let text = String(validating: input, as: UTF8.self) else {
            outcome.answer("not UTF-8: refused before parsing")
            return
        }
        guard case .success(let keys) = KeyFileChecks.parseAllowedKeys(text, &outcome) else { return }
        outcome.answer("\(keys.entries.count) entries")
        outcome.check(
            KeyFileChecks.parseAllowedKeys(keys.serialized(), &outcome) == .success(keys),
            "the file as AllowedKeys writes it reads as another set")
        var edited = keys
        let added = AllowedKey(role: .worker, publicKey: KeyFileChecks.unlistedKey, name: nil)
        if keys.entry(forKey: added.publicKey) == nil {
            do {
                try edited.allow(added)
            } catch {
                outcome.check(false, "allowing a new key failed: \(error)")
            }
        }
        if let first = keys.entries.first { edited.revoke(first.publicKey) }
        let expected = keys.entries.filter { $0.publicKey != keys.entries.first?.publicKey }
            + (keys.entry(forKey: added.publicKey) == nil ? [added] : [])
        let reread = KeyFileChecks.parseAllowedKeys(edited.serialized(), &outcome)
        outcome.check((try? reread.get().entries) == expected, "after an edit the file reads as \(reread), not \(expected)")
    }
}

/// What the key-file targets check.
enum KeyFileChecks {
    /// A key no seed lists.
    static let unlistedKey = "E5$pkr?OLV=m8xJG@>g[4+1ql1TDMHn!JCkZcDw&"

    static func parseAllowedKeys(_ text: String, _ outcome: inout FuzzOutcome) -> Result<AllowedKeys, AllowedKeysError> {
        parse(text, as: "AllowedKeys", line: \.line, &outcome) { (text) throws(AllowedKeysError) in
            try AllowedKeys(parsing: text, file: "allowed_keys")
        }
    }

    /// `parse` of a key file's text, checked: a refusal names a line of the file (or none: 0),
    /// and the file saved with CRLF line ends reads the same.
    static func parse<Value: Equatable, Failure: Error & Equatable>(
        _ text: String, as parser: String, line: (Failure) -> Int, _ outcome: inout FuzzOutcome,
        _ parse: (String) throws(Failure) -> Value
    ) -> Result<Value, Failure> {
        func once(_ text: String) -> Result<Value, Failure> {
            do throws(Failure) {
                return .success(try parse(text))
            } catch {
                outcome.refused(parser, error)
                let lines = text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).count
                outcome.check((0...lines).contains(line(error)), "\(parser) blames line \(line(error)) of a \(lines)-line file")
                return .failure(error)
            }
        }
        let result = once(text)
        if !text.contains("\r") {
            let crlf = once(text.replacingOccurrences(of: "\n", with: "\r\n"))
            outcome.check(crlf == result, "with CRLF line ends the file reads as \(crlf), not \(result)")
        }
        return result
    }
}
