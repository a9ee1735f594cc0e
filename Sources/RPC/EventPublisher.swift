import Foundation
import Proto
import Runtime
import Synchronization
import ZMQ

/// Publishes events as [topic][protobuf] on a PUB socket owned by its own thread.
///
/// Events are for watching; a slow or absent subscriber loses them (PUB drops at HWM),
/// and no reliable path depends on them.
public final class EventPublisher: Sendable {
    private let queue = Mutex<(events: [[[UInt8]]], stopping: Bool)>(([], false))
    private let wakeUp: WakeUp
    private let finished = Mutex(false)
    private let bound = Mutex<[String]>([])

    /// Binds `endpoints` on a new thread; throws when a bind fails.
    public init(context: Context, endpoints: [String], logger: Logger) throws {
        wakeUp = try WakeUp()
        let ready = DispatchSemaphore(value: 0)
        let startError = Mutex<(any Error)?>(nil)
        let thread = Thread { [self, wakeUp] in
            defer { finished.withLock { $0 = true } }
            let socket: Socket
            do {
                socket = try Socket(context, .pub)
                try socket.setSendHighWaterMark(10_000)
                var endpointsBound: [String] = []
                for endpoint in endpoints {
                    try socket.bind(endpoint)
                    endpointsBound.append(endpoint.contains("*") || endpoint.hasSuffix(":0") ? try socket.lastEndpoint : endpoint)
                }
                bound.withLock { $0 = endpointsBound }
            } catch {
                startError.withLock { $0 = error }
                ready.signal()
                return
            }
            ready.signal()
            let poller = Poller()
            poller.add(fd: wakeUp.fd, events: .in)
            while true {
                guard (try? poller.poll(timeoutMilliseconds: 1000)) != nil else { break }
                wakeUp.drain()
                let (events, stopping) = queue.withLock { state in
                    defer { state.events.removeAll() }
                    return (state.events, state.stopping)
                }
                for event in events { _ = try? socket.send(event, dontWait: true) }
                if stopping { break }
            }
            socket.close()
        }
        thread.name = "event-publisher"
        thread.start()
        ready.wait()
        if let error = startError.withLock({ $0 }) { throw error }
        logger.info("publishing events", ["events": boundEndpoints.joined(separator: ",")])
    }

    /// The endpoints bound (wildcards resolved).
    public var boundEndpoints: [String] { bound.withLock { $0 } }

    /// Queues one event; never blocks.
    public func publish(topic: String, _ event: some ProtoMessage) {
        queue.withLock { $0.events.append([Array(topic.utf8), event.serializedBytes()]) }
        wakeUp.signal()
    }

    /// Sends what is queued, closes the socket and ends the thread.
    public func stop() {
        queue.withLock { $0.stopping = true }
        wakeUp.signal()
        while !finished.withLock({ $0 }) { usleep(1000) }
    }

    deinit {
        stop()
    }
}

/// The event topics of PROTOCOL.md.
public enum EventTopic {
    public static let itemCreated = "item.created"
    public static let itemUpdated = "item.updated"
    public static let itemDeleted = "item.deleted"
    public static let imageStored = "image.stored"
    public static let imageDeleted = "image.deleted"
    public static let jobDone = "job.done"
    public static let jobDead = "job.dead"
}
