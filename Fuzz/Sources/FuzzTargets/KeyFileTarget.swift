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
        guard case .success(let certificate) = KeyFileChecks.parseCertificate(text, &outcome) else { return }
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
    static func parseCertificate(_ text: String, _ outcome: inout FuzzOutcome) -> Result<CurveCertificate, KeyFileError> {
        parse(text, as: "CurveCertificate", line: { if case .malformed(_, let line, _) = $0 { line } else { 0 } }, &outcome) {
            (text) throws(KeyFileError) in try CurveCertificate(parsing: text, path: "fuzz.key_secret")
        }
    }
}
