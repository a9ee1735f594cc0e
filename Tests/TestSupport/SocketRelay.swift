import Foundation
import Locking
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A relay between the clients of one `ipc://` endpoint and a server's `ipc://` endpoint,
/// copying bytes both ways on a thread of its own, that cuts every connection through it when
/// told: a connection lost at the moment a test chooses (after the server ran a call, before
/// its answer left), which the client sees as a peer gone and reconnects from. Call `close()`
/// when done: the thread holds the relay until then.
public final class SocketRelay: Sendable {
    /// Where clients connect ("ipc://…").
    public let endpoint: String
    private let listener: Int32
    private let control: (read: Int32, write: Int32)
    private let acknowledged = DispatchSemaphore(value: 0)
    private let closed = Locked(false)
    private let accepted = Atomic<Int>(0)

    /// Listens at `endpoint` and relays each connection to `target`; both are `ipc://` paths.
    public init(to target: String, at endpoint: String) throws {
        self.endpoint = endpoint
        let path = try Self.path(of: endpoint), targetPath = try Self.path(of: target)
        let listener = try Self.unixSocket()
        self.listener = listener
        try Self.withAddress(path) { address, size in
            guard bind(listener, address, size) == 0, listen(listener, 16) == 0 else {
                Glibc.close(listener)
                throw Self.failure("bind \(path)")
            }
        }
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw Self.failure("pipe") }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        control = (ends[0], ends[1])
        let thread = Thread { [self] in relay(to: targetPath, path: path) }
        thread.name = "socket-relay"
        thread.start()
    }

    /// Connections accepted so far (a client that reconnected counts again).
    public var connections: Int { accepted.load(ordering: .relaxed) }

    /// Closes every connection through the relay, both ends, and returns once they are closed;
    /// connections made afterwards are relayed as before.
    public func cut() {
        guard !closed.withLock({ $0 }) else { return }
        command(UInt8(ascii: "c"))
    }

    /// Closes every connection and the listening socket, and joins the thread; safe to call twice.
    public func close() {
        let first = closed.withLock { closed in
            defer { closed = true }
            return !closed
        }
        guard first else { return }
        command(UInt8(ascii: "q"))
        Glibc.close(control.read)
        Glibc.close(control.write)
    }

    private func command(_ byte: UInt8) {
        var byte = byte
        _ = write(control.write, &byte, 1)
        acknowledged.wait()
    }

    /// The thread: copies, accepts, and obeys the control pipe until told to quit.
    private func relay(to target: String, path: String) {
        // Each accepted client paired with its own connection to the target.
        var pairs: [(client: Int32, server: Int32)] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        defer {
            for pair in pairs { Self.close(pair) }
            Glibc.close(listener)
            unlink(path)
            acknowledged.signal()
        }
        while true {
            var fds = [pollfd(fd: control.read, events: Int16(POLLIN), revents: 0), pollfd(fd: listener, events: Int16(POLLIN), revents: 0)]
            for pair in pairs {
                fds.append(pollfd(fd: pair.client, events: Int16(POLLIN), revents: 0))
                fds.append(pollfd(fd: pair.server, events: Int16(POLLIN), revents: 0))
            }
            if poll(&fds, nfds_t(fds.count), -1) < 0 {
                if errno == EINTR { continue }
                return
            }
            if fds[0].revents != 0 {
                var byte: UInt8 = 0
                _ = read(control.read, &byte, 1)
                if byte == UInt8(ascii: "q") { return }
                for pair in pairs { Self.close(pair) }
                pairs = []
                acknowledged.signal()
                continue
            }
            // What each readable end has goes to its partner; an end that closed closes the pair.
            var ended = IndexSet()
            for (index, pair) in pairs.enumerated() {
                for (from, to, slot) in [(pair.client, pair.server, 2 + 2 * index), (pair.server, pair.client, 3 + 2 * index)]
                where fds[slot].revents != 0 && !ended.contains(index) {
                    let count = read(from, &buffer, buffer.count)
                    if count <= 0 || !Self.writeAll(to, buffer[..<count]) { ended.insert(index) }
                }
            }
            for index in ended.reversed() { Self.close(pairs.remove(at: index)) }
            if fds[1].revents != 0 {
                let client = accept(listener, nil, nil)
                guard client >= 0 else { continue }
                _ = fcntl(client, F_SETFD, FD_CLOEXEC)
                accepted.add(1, ordering: .relaxed)
                if let server = try? Self.connected(to: target) {
                    pairs.append((client, server))
                } else {
                    Glibc.close(client)
                }
            }
        }
    }

    private static func close(_ pair: (client: Int32, server: Int32)) {
        Glibc.close(pair.client)
        Glibc.close(pair.server)
    }

    private static func writeAll(_ fd: Int32, _ bytes: ArraySlice<UInt8>) -> Bool {
        var offset = bytes.startIndex
        while offset < bytes.endIndex {
            let written = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }

    private static func path(of endpoint: String) throws -> String {
        guard endpoint.hasPrefix("ipc://") else { throw failure("not an ipc:// endpoint: \(endpoint)") }
        return String(endpoint.dropFirst("ipc://".count))
    }

    private static func unixSocket() throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw failure("socket") }
        return fd
    }

    private static func connected(to path: String) throws -> Int32 {
        let fd = try unixSocket()
        do {
            try withAddress(path) { address, size in
                guard connect(fd, address, size) == 0 else { throw failure("connect \(path)") }
            }
            return fd
        } catch {
            Glibc.close(fd)
            throw error
        }
    }

    private static func withAddress(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) throws -> Void) throws {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { throw failure("path too long: \(path)") }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        try withUnsafePointer(to: &address) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                try body($0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
    }

    private static func failure(_ what: String) -> SocketRelayError {
        SocketRelayError(description: "socket relay: \(what): \(String(cString: strerror(errno)))")
    }
}

/// Why a relay could not start.
public struct SocketRelayError: Error, CustomStringConvertible {
    public let description: String
}
