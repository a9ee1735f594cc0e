import CurveAuth
import Proto

/// Authentication and roles, the first layer a request meets: with CURVE keys, who sent it (the
/// User-Id ZAP gave the connection, looked up again per message so a revocation applies at once)
/// and whether that key's role may call the method (its .proto `allow`, `MethodRoles`).
enum RoleCheck {
    /// Who sent a message.
    enum Sender: Equatable {
        /// The server has no keys: anyone reaching it may call.
        case open
        /// An allowed key.
        case caller(CallerKey)
        /// A key not (or no longer) allowed: its message is dropped unanswered, so an unknown key
        /// learns nothing, not even that the server is here.
        case unknown
    }

    /// Finds the sender of a message whose User-Id is `userID` among the allowed keys.
    static func sender(userID: String?, keys: KeyTable?) -> Sender {
        guard let keys else { return .open }
        return sender(userID: userID, entry: keys.entry(ofUserID:))
    }

    /// `sender(userID:keys:)` over any lookup of the allowed keys.
    static func sender(userID: String?, entry: (String) -> AllowedKey?) -> Sender {
        guard let userID, let allowed = entry(userID) else { return .unknown }
        return .caller(CallerKey(role: allowed.role, name: allowed.name, publicKey: userID))
    }

    /// The PERMISSION_DENIED message for `caller` calling `path`, which `callers` (besides admin)
    /// may call; nil when its role may. It says who may, and how an admin changes a key's role.
    static func denial(of caller: CallerKey, path: String, callers: [Caller]) -> String? {
        guard !caller.role.mayCall(callers) else { return nil }
        let name = caller.name.map { "'\($0)' " } ?? ""
        return "key \(name)has the \(caller.role.rawValue) role; \(path) "
            + (callers.isEmpty ? "needs admin" : "may be called by " + MethodRoles.describe(callers))
            + " (an admin can change it: homepwner keys allow ROLE KEY --file ALLOWED)"
    }
}
