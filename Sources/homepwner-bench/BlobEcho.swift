import Foundation
import ImageService
import Proto
import RPC
import Runtime
import Locking
import ZMQ

/// Bare ZeroMQ: a ROUTER thread answering each small request with the same three frames a
/// GetImage reply has (`[empty][header][blob]`), over tcp loopback, one at a time; writing
/// the blob of each large request to a file of its own (`rawWrite`: write + fsync) before a
/// small answer, a put without the service (`Sink`); and answering a request naming a file
/// with its bytes, read straight into the reply's frame, a get without the service (`Reader`).
final class BlobEcho: Sendable {
    private final class Shared: Sendable {
        /// The blobs to answer with, in turn: the same bytes the service serves.
        let blobs = Locked<[[UInt8]]>([])
        /// Where the sink writes, and how many files it wrote.
        let sink = Locked<(folder: String, count: Int)>(("", 0))
    }

    /// Requests whose last frame is larger are blobs to write.
    static let sinkThreshold = 1024
    /// A request whose last frame starts with this names a file to answer with (`read:PATH`),
    /// or a range of one (`read:OFFSET+LENGTH@PATH`).
    static let readMarker = Array("read:".utf8)

    private let endpoint: String
    private let context: Context
    /// The calling side's context (another process's, in a deployment).
    private let clientContext: Context
    private let shared = Shared()
    private let loop: SocketLoop

    init(context: Context, clientContext: Context) throws {
        self.context = context
        self.clientContext = clientContext
        loop = try SocketLoop(name: "blob-echo")
        let shared = shared
        let bound = Locked<String?>(nil)
        try loop.start { poller in
            let steps = try Steps(context, shared, poller)
            bound.withLock { $0 = steps.endpoint }
            return steps
        }
        guard let bound = bound.withLock({ $0 }) else { throw RPCError.unavailable("echo server did not bind") }
        endpoint = bound
    }

    /// The ROUTER socket's thread: answers, writes or reads each request as it comes.
    private final class Steps: SocketLoopSteps {
        let router: Socket
        let routerIndex: Int
        let shared: Shared
        let endpoint: String?
        var next = 0

        init(_ context: Context, _ shared: Shared, _ poller: Poller) throws {
            router = try Socket(context, .router)
            try router.bind("tcp://127.0.0.1:*")
            endpoint = try? router.lastEndpoint
            routerIndex = poller.add(router, events: .in)
            self.shared = shared
        }

        func pollTimeout() -> Int? { -1 }

        func turn(_ polled: Poller?) -> Bool {
            guard polled?.revents(routerIndex).contains(.in) ?? true else { return true }
            while let message = try? router.receiveFrames(dontWait: true) {
                if let last = message.last, last.count > BlobEcho.sinkThreshold {
                    let path = shared.sink.withLock { sink in
                        defer { sink.count += 1 }
                        return "\(sink.folder)/\(sink.count)"
                    }
                    let written = (try? last.withUnsafeBytes { try ImagesBenchmark.rawWrite($0, path: path) }) != nil
                    _ = try? router.send([message[0].bytes, [], written ? [8, 1] : [8, 13]])
                    continue
                }
                if let last = message.last, last.count > BlobEcho.readMarker.count, last.bytes.starts(with: BlobEcho.readMarker) {
                    let path = String(decoding: last.bytes.dropFirst(BlobEcho.readMarker.count), as: UTF8.self)
                    if let frame = BlobEcho.readFile(path) {
                        _ = try? router.send([message[0].bytes, [], [8, 1]], body: frame)
                    } else {
                        _ = try? router.send([message[0].bytes, [], [8, 5]])
                    }
                    continue
                }
                let blob = shared.blobs.withLock { $0.isEmpty ? [] : $0[next % $0.count] }
                next += 1
                _ = try? router.send([message[0].bytes, [], [8, 1], blob])
            }
            return true
        }

        func drain() { router.close() }
    }

    /// MB/s of request/reply exchanges, one per blob of `blobs` in turn (the blobs GetImage
    /// serves in the same round: as many distinct buffers, so neither side has them all in
    /// the CPU's caches).
    func transfer(_ blobs: [[UInt8]]) throws -> ImagesBenchmark.Measure {
        shared.blobs.withLock { $0 = blobs }
        defer { shared.blobs.withLock { $0 = [] } }
        let dealer = try Socket(clientContext, .dealer)
        defer { dealer.close() }
        try dealer.connect(endpoint)
        let request: [[UInt8]] = [[], [10, 1, 0x2f], [10, 36] + Array(repeating: 0x61, count: 36)]
        // One exchange to connect (its blob is skipped: the echo goes on from the next one).
        try dealer.send(request)
        _ = try dealer.receive()
        var total = 0
        let start = monotonicSeconds()
        for _ in 0..<blobs.count {
            try dealer.send(request)
            total += try dealer.receive()?.last?.count ?? 0
        }
        return ImagesBenchmark.Measure(bytes: total, seconds: monotonicSeconds() - start)
    }

    /// The calling end of a put without the service: each blob sent in one frame, written to a
    /// file of its own in `folder` and fsynced by the server thread before it answers.
    final class Sink {
        private let dealer: Socket

        fileprivate init(_ dealer: Socket) { self.dealer = dealer }

        func put(_ blob: [UInt8]) throws {
            _ = try dealer.send([[], [10, 1, 0x2f], blob])
            guard let reply = try dealer.receive(), reply.last == [8, 1] else {
                throw RPCError.internal("the sink could not write its file")
            }
        }

        func close() { dealer.close() }
    }

    /// A connected `Sink` writing into `folder` (which must exist).
    func sink(folder: String) throws -> Sink {
        shared.sink.withLock { $0 = (folder, 0) }
        let dealer = try Socket(clientContext, .dealer)
        try dealer.connect(endpoint)
        // One exchange to connect.
        _ = try dealer.send([[], [10, 1, 0x2f], [10, 36] + Array(repeating: 0x61, count: 36)])
        _ = try dealer.receive()
        return Sink(dealer)
    }

    /// The file at `path` read into a frame of its size (open, fstat, read, close); nil when it cannot be read.
    static func readFile(_ request: String) -> Frame? {
        // `OFFSET+LENGTH@PATH`: that range, with one pread.
        var path = request, offset = 0, length: Int?
        if let at = request.firstIndex(of: "@"), let plus = request[..<at].firstIndex(of: "+"),
            let from = Int(request[..<plus]), let count = Int(request[request.index(after: plus)..<at]) {
            (path, offset, length) = (String(request[request.index(after: at)...]), from, count)
        }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return nil }
        let frame = Frame(uninitializedCount: length ?? Int(info.st_size))
        let target = frame.unsafeMutableBytes
        var done = 0
        while done < target.count {
            let n = pread(fd, target.baseAddress! + done, target.count - done, off_t(offset + done))
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return nil }
            done += n
        }
        return frame
    }

    /// The calling end of a get without the service: asks for a file, receives its bytes.
    final class Reader {
        private let dealer: Socket

        fileprivate init(_ dealer: Socket) { self.dealer = dealer }

        /// The size of the file at `path`, read and sent by the server thread.
        func read(_ path: String, range: (offset: Int, length: Int)? = nil) throws -> Int {
            let named = range.map { "\($0.offset)+\($0.length)@\(path)" } ?? path
            _ = try dealer.send([[], [10, 1, 0x2f], BlobEcho.readMarker + Array(named.utf8)])
            guard let reply = try dealer.receive(), reply.count == 3, reply[1] == [8, 1] else {
                throw RPCError.internal("the reader could not read \(path)")
            }
            return reply[2].count
        }

        func close() { dealer.close() }
    }

    /// A connected `Reader`.
    func reader() throws -> Reader {
        let dealer = try Socket(clientContext, .dealer)
        try dealer.connect(endpoint)
        // One exchange to connect.
        _ = try dealer.send([[], [10, 1, 0x2f], [10, 36] + Array(repeating: 0x61, count: 36)])
        _ = try dealer.receive()
        return Reader(dealer)
    }

    func stop() {
        loop.stop()
    }
}
