import Foundation
import Testing
import ZMQ

@Test func monitorReportsConnectedAcceptedAndDisconnectedOverTCP() throws {
    let context = try Context()
    let server = try makeSocket(context, .router)
    let serverEvents = try makeMonitor(context, of: server, events: [.listening, .accepted, .handshakeSucceeded, .disconnected])
    try server.bind("tcp://127.0.0.1:*")
    let endpoint = try server.lastEndpoint

    let client = try makeSocket(context, .dealer)
    let clientEvents = try makeMonitor(context, of: client, events: [.connected, .handshakeSucceeded, .monitorStopped])
    try client.connect(endpoint)

    let listening = try nextEvent(on: serverEvents)
    #expect(listening.event == .listening)
    #expect(listening.endpoint == endpoint)

    let connected = try nextEvent(on: clientEvents)
    #expect(connected.event == .connected)
    #expect(connected.endpoint == endpoint)
    let clientHandshake = try nextEvent(on: clientEvents)
    #expect(clientHandshake.event == .handshakeSucceeded)

    let accepted = try nextEvent(on: serverEvents)
    #expect(accepted.event == .accepted)
    #expect(accepted.value > 0)  // the accepted fd
    let serverHandshake = try nextEvent(on: serverEvents)
    #expect(serverHandshake.event == .handshakeSucceeded)

    client.close()
    let stopped = try nextEvent(on: clientEvents)
    #expect(stopped.event == .monitorStopped)

    let disconnected = try nextEvent(on: serverEvents)
    #expect(disconnected.event == .disconnected)
}

@Test func monitorEventDecodesNativeFramesAndRejectsOthers() {
    var header: [UInt8] = [0, 0, 0, 0, 0, 0]
    header.withUnsafeMutableBytes { raw in
        raw.storeBytes(of: UInt16(0x0020), toByteOffset: 0, as: UInt16.self)
        raw.storeBytes(of: UInt32(42), toByteOffset: 2, as: UInt32.self)
    }
    let event = MonitorEvent(frames: [header, bytes("tcp://127.0.0.1:5555")])
    #expect(event?.event == .accepted)
    #expect(event?.value == 42)
    #expect(event?.endpoint == "tcp://127.0.0.1:5555")

    #expect(MonitorEvent(frames: [header]) == nil)
    #expect(MonitorEvent(frames: [[1, 2, 3], bytes("x")]) == nil)
}
