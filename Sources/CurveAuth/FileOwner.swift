#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A numeric user and group to give a key file to: the user a container runs as (10001 in
/// compose/Dockerfile), which must be able to read its secret key while nobody else can.
public struct FileOwner: Sendable, Equatable, CustomStringConvertible {
    public let user: uid_t
    public let group: gid_t

    public init(user: uid_t, group: gid_t) {
        self.user = user
        self.group = group
    }

    /// `UID` or `UID:GID` (numbers; the group is the user's number when left out); nil for
    /// anything else.
    public init?(parsing text: String) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let user = uid_t(parts[0]) else { return nil }
        guard let group = parts.count == 2 ? gid_t(parts[1]) : gid_t(user) else { return nil }
        self.init(user: user, group: group)
    }

    /// Whether this process may give files to this owner: root may give them to anyone, others
    /// only keep them (chown to oneself and one's own group).
    public var isGrantable: Bool {
        geteuid() == 0 || (user == geteuid() && group == getegid())
    }

    public var description: String { "\(user):\(group)" }
}
