import Foundation
import Testing
import ZMQ

/// A fresh inproc endpoint, so parallel tests never share a name.
func uniqueInproc(_ label: String = #function) -> String {
    let name = label.prefix { $0 != "(" }
    return "inproc://\(name)-\(UUID().uuidString)"
}

/// The bytes of a UTF-8 string.
func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// Creates a socket whose blocking receives give up after `timeout` ms, so a missing message fails the test instead of hanging it.
func makeSocket(_ context: Context, _ type: SocketType, timeout: Int32 = 2000) throws -> Socket {
    let socket = try Socket(context, type)
    try socket.setReceiveTimeout(timeout)
    try socket.setSendTimeout(timeout)
    return socket
}

/// A PULL socket bound to a fresh inproc endpoint and a PUSH socket connected to it.
func pushPull(_ context: Context, label: String = #function) throws -> (push: Socket, pull: Socket) {
    let endpoint = uniqueInproc(label)
    let pull = try makeSocket(context, .pull)
    try pull.bind(endpoint)
    let push = try makeSocket(context, .push)
    try push.connect(endpoint)
    return (push, pull)
}

/// Creates a PAIR socket connected to a fresh monitor endpoint of `socket`.
func makeMonitor(_ context: Context, of socket: Socket, events: MonitorEvents, label: String = #function) throws -> Socket {
    let endpoint = uniqueInproc("monitor-\(label)")
    try socket.monitor(endpoint: endpoint, events: events)
    let pair = try makeSocket(context, .pair)
    try pair.connect(endpoint)
    return pair
}

/// Reads monitor events until one in `wanted` arrives (throws on timeout); returns it and everything skipped.
func awaitEvent(_ wanted: MonitorEvents, on monitor: Socket) throws -> (event: MonitorEvent, skipped: [MonitorEvent]) {
    var skipped: [MonitorEvent] = []
    while true {
        let event = try nextEvent(on: monitor)
        if wanted.contains(event.event) { return (event, skipped) }
        skipped.append(event)
    }
}

/// Receives and decodes the next monitor event (throws on timeout or a malformed message).
func nextEvent(on monitor: Socket) throws -> MonitorEvent {
    let frames = try #require(try monitor.receive())
    return try #require(MonitorEvent(frames: frames))
}

/// Runs `body` on a new OS thread (not the test's cooperative pool), e.g. to block or signal concurrently.
func onThread(_ body: @escaping @Sendable () -> Void) {
    Thread.detachNewThread(body)
}

/// A value handed from a helper thread to the test; the semaphore wait orders the accesses.
final class Handoff<Value>: @unchecked Sendable {
    var value: Value?
    let done = DispatchSemaphore(value: 0)

    /// Stores the value and wakes the waiter.
    func finish(_ value: Value) {
        self.value = value
        done.signal()
    }

    /// The value, or nil if the thread did not finish within `seconds`.
    func wait(seconds: Double) -> Value? {
        done.wait(timeout: .now() + seconds) == .success ? value : nil
    }
}
