import Foundation
import Testing
import ZMQ

@Test func dealerRouterRoundTripKeepsEmptyFramesAndTenFrames() throws {
    let context = try Context()
    let endpoint = uniqueInproc()
    let router = try makeSocket(context, .router)
    try router.bind(endpoint)
    let dealer = try makeSocket(context, .dealer)
    try dealer.setRoutingID(bytes("client-1"))
    try dealer.connect(endpoint)

    let message: [[UInt8]] = [[], bytes("one"), [], [0], bytes("four"), [], [1, 2, 3], [], bytes("eight"), []]
    #expect(message.count == 10)
    #expect(try dealer.send(message))

    let received = try #require(try router.receive())
    #expect(received.first == bytes("client-1"))
    #expect(Array(received.dropFirst()) == message)

    #expect(try router.send([bytes("client-1")] + message.reversed()))
    let reply = try #require(try dealer.receive())
    #expect(reply == message.reversed())
}

@Test func singleEmptyFrameIsAMessage() throws {
    let context = try Context()
    let (push, pull) = try pushPull(context)

    try push.send([[]])
    #expect(try pull.receive() == [[]])
}

@Test func sixteenMebibyteFrameRoundTripsOverTCP() throws {
    let context = try Context()
    let router = try makeSocket(context, .router, timeout: 5000)
    try router.bind("tcp://127.0.0.1:*")
    let dealer = try makeSocket(context, .dealer, timeout: 5000)
    try dealer.connect(try router.lastEndpoint)

    var big = [UInt8](repeating: 0xAB, count: 16 << 20)
    big[0] = 1
    big[big.count / 2] = 2
    big[big.count - 1] = 3
    try dealer.send([bytes("header"), big])

    let received = try #require(try router.receive())
    try #require(received.count == 3)
    #expect(received[1] == bytes("header"))
    #expect(received[2].count == big.count)
    // memcmp: element-wise == on 16 MiB is slow in debug builds.
    let same = received[2].withUnsafeBytes { a in big.withUnsafeBytes { b in memcmp(a.baseAddress!, b.baseAddress!, b.count) == 0 } }
    #expect(same)
}

@Test func reqThroughRouterShowsEmptyDelimiter() throws {
    let context = try Context()
    let endpoint = uniqueInproc()
    let router = try makeSocket(context, .router)
    try router.bind(endpoint)
    let req = try makeSocket(context, .req)
    try req.connect(endpoint)

    try req.send([bytes("hello")])
    let request = try #require(try router.receive())
    try #require(request.count == 3)
    #expect(request[1] == [])
    #expect(request[2] == bytes("hello"))

    try router.send([request[0], [], bytes("world")])
    #expect(try req.receive() == [bytes("world")])
}

@Test func probeRouterAnnouncesPeerWithEmptyMessage() throws {
    let context = try Context()
    let endpoint = uniqueInproc()
    let router = try makeSocket(context, .router)
    try router.bind(endpoint)
    let dealer = try makeSocket(context, .dealer)
    try dealer.setRoutingID(bytes("prober"))
    try dealer.setProbeRouter(true)
    try dealer.connect(endpoint)

    #expect(try router.receive() == [bytes("prober"), []])
}

@Test func receiveWithDontWaitReturnsNilWhenNothingQueued() throws {
    let context = try Context()
    let pull = try makeSocket(context, .pull)
    try pull.bind(uniqueInproc())
    #expect(try pull.receive(dontWait: true) == nil)
}

@Test func sendWithDontWaitReturnsFalseWithoutPeers() throws {
    let context = try Context()
    let dealer = try makeSocket(context, .dealer)
    #expect(try dealer.send([bytes("lost")], dontWait: true) == false)
}

@Test func sendWithDontWaitReturnsFalseAtHighWaterMarkAndSendsNothing() throws {
    let context = try Context()
    let endpoint = uniqueInproc()
    let pull = try makeSocket(context, .pull)
    try pull.setReceiveHighWaterMark(1)
    try pull.bind(endpoint)
    let push = try makeSocket(context, .push)
    try push.setSendHighWaterMark(1)
    try push.connect(endpoint)

    // inproc pipes hold SNDHWM + RCVHWM messages; fill them without anyone reading.
    var queued = 0
    while try push.send([bytes("m\(queued)"), bytes("part two")], dontWait: true) {
        queued += 1
        try #require(queued < 100)
    }
    #expect(queued >= 1)

    // Everything queued arrives whole; the refused message left no stray frames behind.
    for index in 0..<queued {
        #expect(try pull.receive() == [bytes("m\(index)"), bytes("part two")])
    }
    #expect(try pull.receive(dontWait: true) == nil)
}

@Test func receiveTimeoutThrowsAgain() throws {
    let context = try Context()
    let pull = try makeSocket(context, .pull, timeout: 50)
    try pull.bind(uniqueInproc())
    let error = #expect(throws: ZMQError.self) { try pull.receive() }
    #expect(error?.isAgain == true)
}

@Test func sendOfNoFramesIsRejected() throws {
    let context = try Context()
    let dealer = try makeSocket(context, .dealer)
    let error = #expect(throws: ZMQError.self) { try dealer.send([]) }
    #expect(error?.code == EINVAL)
}

@Test func routerMandatoryRejectsUnknownPeer() throws {
    let context = try Context()
    let endpoint = uniqueInproc()
    let router = try makeSocket(context, .router)
    try router.setRouterMandatory(true)
    try router.bind(endpoint)
    let dealer = try makeSocket(context, .dealer)
    try dealer.setRoutingID(bytes("known"))
    try dealer.connect(endpoint)

    let unknown = #expect(throws: ZMQError.self) { try router.send([bytes("nobody"), bytes("x")], dontWait: true) }
    #expect(unknown?.isHostUnreachable == true)
    // ROUTER_MANDATORY fails fast even for a blocking send.
    let blocking = #expect(throws: ZMQError.self) { try router.send([bytes("nobody"), bytes("x")]) }
    #expect(blocking?.code == EHOSTUNREACH)

    // A peer the router has heard from is routable.
    try dealer.send([bytes("hi")])
    #expect(try router.receive() == [bytes("known"), bytes("hi")])
    #expect(try router.send([bytes("known"), bytes("back")], dontWait: true))
    #expect(try dealer.receive() == [bytes("back")])
}

@Test func maxMessageSizeDisconnectsOversizedPeerAndKeepsServingOthers() throws {
    let context = try Context()
    let router = try makeSocket(context, .router)
    try router.setMaxMessageSize(1000)
    #expect(try router.maxMessageSize == 1000)
    let monitor = try makeMonitor(context, of: router, events: [.disconnected])
    // MAXMSGSIZE is enforced by the ZMTP decoder, so only stream transports (tcp/ipc) see it, not inproc.
    try router.bind("tcp://127.0.0.1:*")
    let endpoint = try router.lastEndpoint

    let bad = try makeSocket(context, .dealer)
    try bad.setRoutingID(bytes("bad"))
    try bad.connect(endpoint)
    try bad.send([[UInt8](repeating: 7, count: 5000)])

    let disconnect = try awaitEvent(.disconnected, on: monitor).event
    #expect(disconnect.endpoint == endpoint)

    let good = try makeSocket(context, .dealer)
    try good.setRoutingID(bytes("good"))
    try good.connect(endpoint)
    try good.send([bytes("small")])

    #expect(try router.receive() == [bytes("good"), bytes("small")])
    #expect(try router.receive(dontWait: true) == nil)
}

@Test func subscriberOnlyReceivesMatchingPrefix() throws {
    let context = try Context()
    let endpoint = uniqueInproc()
    let pub = try makeSocket(context, .pub)
    try pub.bind(endpoint)
    let sub = try makeSocket(context, .sub)
    try sub.subscribe(bytes("weather"))
    try sub.connect(endpoint)

    // Subscriptions travel to the publisher asynchronously: publish until one gets through.
    let poller = Poller()
    poller.add(sub, events: .in)
    var synced = false
    for _ in 0..<200 where !synced {
        try pub.send([bytes("weather"), bytes("sync")])
        synced = try poller.poll(timeoutMilliseconds: 10) > 0
    }
    try #require(synced)
    while try sub.receive(dontWait: true) != nil {}

    try pub.send([bytes("sports"), bytes("ignored")])
    try pub.send([bytes("weather.rain"), bytes("kept")])
    #expect(try sub.receive() == [bytes("weather.rain"), bytes("kept")])

    try sub.unsubscribe(bytes("weather"))
}
