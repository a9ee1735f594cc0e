#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Runtime

/// Runs blocking socket work on a thread of its own, off the shared pool.
public func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await onThreadOfItsOwn("test-io", body)
}

/// A blocking TCP client on loopback, every read bounded by a receive timeout.
public final class TestHTTPClient {
    public let fd: Int32

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public init(port: UInt16, readTimeoutSeconds: Int = 10) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        var timeout = timeval(tv_sec: readTimeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else {
            let code = errno
            Glibc.close(fd)
            throw Failure(description: "connect: errno \(code)")
        }
    }

    deinit { Glibc.close(fd) }

    public func write(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw Failure(description: "send: errno \(errno)")
            }
            sent += n
        }
    }

    /// Everything until the peer closes (a reset ends it too); throws when the read timeout passes.
    public func readToEnd() throws -> [UInt8] {
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 { result += buffer[..<n]; continue }
            if n == 0 { return result }
            if errno == EINTR { continue }
            if errno == ECONNRESET { return result }
            throw Failure(description: "recv: errno \(errno) after \(result.count) bytes")
        }
    }

    /// Whether a read would not block now (bytes or the end are there), waiting up to `timeoutMilliseconds`.
    public func readable(timeoutMilliseconds: Int32) -> Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, timeoutMilliseconds) == 1
    }

    /// Connects, sends `request`, reads the reply until the endpoint closes.
    public static func exchange(port: UInt16, _ request: String) throws -> [UInt8] {
        let client = try TestHTTPClient(port: port)
        try client.write(Array(request.utf8))
        return try client.readToEnd()
    }
}

/// A parsed HTTP/1.1 reply.
public struct HTTPResponse: Sendable {
    public let statusLine: String
    public let status: Int
    public let headers: [String: String]
    public let body: [UInt8]

    public init(_ bytes: [UInt8]) throws {
        guard let end = Self.headEnd(bytes) else {
            throw TestHTTPClient.Failure(description: "no head in \(bytes.count) bytes: \(String(decoding: bytes.prefix(200), as: UTF8.self).debugDescription)")
        }
        let lines = String(decoding: bytes[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        statusLine = lines[0]
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0] == "HTTP/1.1", let status = Int(parts[1]) else {
            throw TestHTTPClient.Failure(description: "bad status line \(statusLine.debugDescription)")
        }
        self.status = status
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        self.headers = headers
        body = Array(bytes[(end + 4)...])
    }

    /// Where the head ends: the index of its blank line's "\r\n\r\n".
    static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        return (0...(bytes.count - 4)).first { bytes[$0] == 13 && bytes[$0 + 1] == 10 && bytes[$0 + 2] == 13 && bytes[$0 + 3] == 10 }
    }
}
