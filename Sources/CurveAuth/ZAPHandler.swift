import ZMQ

/// ZAP 1.0 (ZeroMQ RFC 27) answered from a key lookup, as a plain function of the request's
/// frames, so it can be tested without sockets.
///
/// A request (what a REP socket receives): version `1.0`, request id, domain, address, routing
/// id, mechanism, then the mechanism's credentials (CURVE: the client's 32-byte public key).
/// The reply: version, request id, status code, status text, user id, metadata.
public enum ZAPHandler {
    /// What became of one request.
    public enum Outcome: Sendable, Equatable {
        /// CURVE with an allowed key: 200, user id = the Z85 key.
        case allowed(publicKey: String, role: Role)
        /// CURVE with a key not in the table: 400.
        case unknownKey(publicKey: String)
        /// NULL, PLAIN or any mechanism but CURVE: 400.
        case mechanismRefused(String)
        /// Not a ZAP 1.0 request: 400 (500 when it has no request id to answer).
        case malformed(String)
    }

    /// The reply to `request` and what it decided; `role` looks a Z85 public key up.
    public static func reply(to request: [[UInt8]], role: (String) -> Role?) -> (reply: [[UInt8]], outcome: Outcome) {
        guard request.count >= 6 else {
            let id = request.count > 1 ? request[1] : []
            return (answer(id, "500", "malformed ZAP request: \(request.count) frames"), .malformed("\(request.count) frames"))
        }
        let id = request[1]
        guard request[0] == Array("1.0".utf8) else {
            let version = String(decoding: request[0].prefix(16), as: UTF8.self)
            return (answer(id, "400", "unsupported ZAP version"), .malformed("version '\(version)'"))
        }
        let mechanism = String(decoding: request[5].prefix(32), as: UTF8.self)
        guard mechanism == "CURVE" else {
            return (answer(id, "400", "mechanism \(mechanism) not allowed: use CURVE"), .mechanismRefused(mechanism))
        }
        guard request.count == 7, request[6].count == 32, let key = try? Z85.encode(request[6]) else {
            return (answer(id, "400", "malformed CURVE credentials"), .malformed("CURVE credentials"))
        }
        guard let granted = role(key) else {
            return (answer(id, "400", "key not allowed"), .unknownKey(publicKey: key))
        }
        // libzmq hands the user id to every message of the connection as its User-Id property.
        return (answer(id, "200", "OK", userID: key), .allowed(publicKey: key, role: granted))
    }

    private static func answer(_ id: [UInt8], _ status: String, _ text: String, userID: String = "") -> [[UInt8]] {
        [Array("1.0".utf8), id, Array(status.utf8), Array(text.utf8), Array(userID.utf8), []]
    }
}
