/// One event read from a monitor PAIR socket.
///
/// libzmq sends two frames: 6 bytes (uint16 event, uint32 value, in the host's native byte
/// order, little endian on every platform we run on) and then the affected endpoint.
public struct MonitorEvent: Sendable, Equatable {
    /// The single event bit that fired.
    public let event: MonitorEvents
    /// The event's value: an fd, an errno or an interval, depending on `event`.
    public let value: UInt32
    /// The endpoint the event is about, e.g. `tcp://127.0.0.1:41234`.
    public let endpoint: String

    /// Decodes a received monitor message; nil if it is not shaped like one.
    public init?(frames: [[UInt8]]) {
        guard frames.count == 2, frames[0].count == 6 else { return nil }
        // libzmq memcpy()s the integers in native order, so load them the same way.
        let (event, value) = frames[0].withUnsafeBytes { bytes in
            (bytes.loadUnaligned(fromByteOffset: 0, as: UInt16.self),
             bytes.loadUnaligned(fromByteOffset: 2, as: UInt32.self))
        }
        self.event = MonitorEvents(rawValue: UInt32(event))
        self.value = value
        self.endpoint = String(decoding: frames[1], as: UTF8.self)
    }
}
