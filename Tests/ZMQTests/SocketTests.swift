import Foundation
import Testing
import ZMQ

@Test func lastEndpointResolvesWildcardPort() throws {
    let context = try Context()
    let rep = try makeSocket(context, .rep)
    try rep.bind("tcp://127.0.0.1:*")
    let endpoint = try rep.lastEndpoint
    #expect(endpoint.hasPrefix("tcp://127.0.0.1:"))
    let port = Int(endpoint.dropFirst("tcp://127.0.0.1:".count)) ?? 0
    #expect(port > 0)

    let req = try makeSocket(context, .req)
    try req.connect(endpoint)
    try req.send([bytes("ping")])
    #expect(try rep.receive() == [bytes("ping")])
    try rep.send([bytes("pong")])
    #expect(try req.receive() == [bytes("pong")])

    try rep.unbind(endpoint)
    try req.disconnect(endpoint)
}

@Test func bindingTakenPortThrowsAddressInUseNamingEndpoint() throws {
    let context = try Context()
    let first = try makeSocket(context, .router)
    try first.bind("tcp://127.0.0.1:*")
    let endpoint = try first.lastEndpoint
    let second = try makeSocket(context, .router)
    let error = #expect(throws: ZMQError.self) { try second.bind(endpoint) }
    #expect(error?.code == EADDRINUSE)
    #expect(error?.operation == "zmq_bind(\(endpoint))")
    #expect(error?.description.contains(endpoint) == true)
}

@Test func closedSocketThrowsNotSocketAndCloseIsIdempotent() throws {
    let context = try Context()
    let socket = try makeSocket(context, .dealer)
    socket.close()
    socket.close()
    let error = #expect(throws: ZMQError.self) { try socket.bind(uniqueInproc()) }
    #expect(error?.code == ENOTSOCK)
    #expect(throws: ZMQError.self) { try socket.send([bytes("x")]) }
    #expect(throws: ZMQError.self) { try socket.receive(dontWait: true) }
    #expect(throws: ZMQError.self) { try socket.lastEndpoint }
}

@Test func optionsRoundTripAndLingerDefaultsToZero() throws {
    let context = try Context()
    let socket = try Socket(context, .dealer)
    #expect(try socket.linger == 0)
    try socket.setLinger(milliseconds: 250)
    #expect(try socket.linger == 250)
    #expect(try socket.maxMessageSize == -1)
    try socket.setMaxMessageSize(4096)
    #expect(try socket.maxMessageSize == 4096)
    try socket.setSendHighWaterMark(10)
    #expect(try socket.sendHighWaterMark == 10)
    try socket.setReceiveHighWaterMark(20)
    #expect(try socket.receiveHighWaterMark == 20)
    try socket.setRoutingID(bytes("abc"))
    #expect(try socket.routingID == bytes("abc"))
    try socket.setHeartbeat(interval: 1000, timeout: 3000, ttl: 5000)
    try socket.setReconnectInterval(100, max: 2000)
    try socket.setImmediate(true)
    try socket.setProbeRouter(true)

    // libzmq rejects an empty routing id.
    let error = #expect(throws: ZMQError.self) { try socket.setRoutingID([]) }
    #expect(error?.code == EINVAL)
}

@Test func errorDescriptionCarriesOperationAndReason() {
    let error = ZMQError(code: EAGAIN, operation: "zmq_msg_recv")
    #expect(error.isAgain)
    #expect(!error.isTerminated)
    #expect(error.description.hasPrefix("zmq_msg_recv: "))
    #expect(error.description.contains("Resource temporarily unavailable"))
}

@Test func versionIsTheLinkedLibzmq() {
    let version = ZMQ.version
    #expect(version.major == 4)
    #expect(version.minor >= 3)
}
