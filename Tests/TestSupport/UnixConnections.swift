import Foundation

/// The connected sockets of this machine whose address is the path of `endpoint` ("ipc://…"),
/// from /proc/net/unix: a server's end of each connection it accepted there (a client's end has
/// no address). A connection the server closed is no longer counted: for a test that must go on
/// only once the server has seen a client go.
public func acceptedConnections(at endpoint: String) -> Int {
    let path = String(endpoint.dropFirst("ipc://".count))
    guard let table = try? String(contentsOfFile: "/proc/net/unix", encoding: .utf8) else { return -1 }
    // Num RefCount Protocol Flags Type St Inode Path; St 03 is connected.
    return table.split(separator: "\n").dropFirst().count { line in
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        return fields.count >= 8 && fields[5] == "03" && fields[7...].joined(separator: " ") == path
    }
}
