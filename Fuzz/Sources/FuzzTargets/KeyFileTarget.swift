import CurveAuth
import Foundation

extension FuzzTarget {
    /// A CURVE certificate file (`NAME.key` or `NAME.key_secret`, the ZPL czmq and pyzmq write)
    /// as `CurveKeyPair.load` reads it: a refusal names its line; what parses reads back the
    /// same from what `CurveCertificate.text` writes, and from the file saved with CRLF line ends.
    static let keyFile = FuzzTarget(
        name: "key-file",
        summary: "the CURVE certificate parser (CurveCertificate) and its writer",
        maxLength: 4096
    ) { input, outcome in
        let text = String(decoding: input, as: UTF8.self)
        let parsed = KeyFileChecks.parseCertificate(text, &outcome)
        if !text.contains("\r") {
            let crlf = KeyFileChecks.parseCertificate(text.replacingOccurrences(of: "\n", with: "\r\n"), &outcome)
            outcome.check(crlf == parsed, "with CRLF line ends the file reads as \(crlf), not \(parsed)")
        }
        guard case .success(let certificate) = parsed else { return }
        outcome.answer("public key \(certificate.publicKey), secret \(certificate.secretKey != nil), \(certificate.metadata.count) metadata")
        // What `text` writes quotes values in "…": one holding a '"' cannot be written back.
        let writable = CurveCertificate(
            publicKey: certificate.publicKey, secretKey: certificate.secretKey,
            metadata: certificate.metadata.filter { !$0.value.contains("\"") })
        for includeSecret in [true, false] {
            let written = writable.text(includeSecret: includeSecret)
            var expected = writable
            if !includeSecret { expected.secretKey = nil }
            let reread = KeyFileChecks.parseCertificate(written, &outcome)
            outcome.check(reread == .success(expected), "what CurveCertificate.text wrote reads as \(reread), not \(expected):\n\(written)")
        }
    }
}

extension KeyFileChecks {
    /// Parses a certificate; a refusal must name a line of it (or none: 0).
    static func parseCertificate(_ text: String, _ outcome: inout FuzzOutcome) -> Result<CurveCertificate, KeyFileError> {
        do {
            return .success(try CurveCertificate(parsing: text, path: "fuzz.key_secret"))
        } catch {
            outcome.refused("CurveCertificate", error)
            let lines = text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).count
            if case .malformed(_, let line, _) = error {
                outcome.check((0...lines).contains(line), "line \(line) of a \(lines)-line file")
            }
            return .failure(error)
        }
    }
}
