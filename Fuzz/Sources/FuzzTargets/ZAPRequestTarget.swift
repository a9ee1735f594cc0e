import CurveAuth
import ZMQ

extension FuzzTarget {
    /// The frames libzmq sends the ZAP handler for each handshake (RFC 27), answered by
    /// `ZAPHandler` from a table of two keys: only CURVE with an allowed key gets 200 and a
    /// user id, and every reply is the six frames libzmq expects.
    static let zapRequest = FuzzTarget(
        name: "zap-request",
        summary: "the ZAP 1.0 request parser and its replies (ZAPHandler)",
        maxLength: 1024
    ) { input, outcome in
        let request = FuzzInput.pieces(input, limit: 16)
        let (reply, decision) = ZAPHandler.reply(to: request) { ZAPKeys.roles[$0] }
        outcome.answer("\(decision)")
        guard reply.count == 6 else {
            outcome.check(false, "a ZAP reply of \(reply.count) frames (libzmq expects 6)")
            return
        }
        let status = String(decoding: reply[2], as: UTF8.self)
        outcome.check(reply[0] == Array("1.0".utf8), "the reply's version is \(reply[0])")
        outcome.check(reply[1] == (request.count > 1 ? request[1] : []), "the reply's request id is not the request's")
        outcome.check(!reply[3].isEmpty, "the reply's status text is empty")
        outcome.check((status == "200") == (reply[4] != []), "status \(status) with user id \(reply[4])")
        switch decision {
        case let .allowed(key, role):
            outcome.check(status == "200" && reply[4] == Array(key.utf8), "allowed \(key) answered \(status)")
            outcome.check(ZAPKeys.roles[key] == role, "allowed \(key) as \(role), which the table does not give it")
            outcome.check(
                request.count == 7 && request[5] == Array("CURVE".utf8) && (try? Z85.encode(request[6])) == key,
                "allowed a request that is not CURVE with that key")
        case let .unknownKey(key):
            outcome.check(status == "400" && ZAPKeys.roles[key] == nil, "an unknown key \(key) answered \(status)")
        case let .mechanismRefused(mechanism):
            outcome.check(status == "400" && mechanism != "CURVE", "mechanism \(mechanism) answered \(status)")
        case let .malformed(reason):
            outcome.check(["400", "500"].contains(status) && !reason.isEmpty, "a malformed request answered \(status) (\(reason))")
        }
    }
}

/// The keys the ZAP target's handler allows.
enum ZAPKeys {
    /// Two keys of the pairs in Fuzz/corpus/key-file, one admin, one reader.
    static let roles: [String: Role] = [
        "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7": .admin,
        "Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID": .reader,
    ]
}
