import Foundation
import Testing
import ZMQ

@Test func pollerWakesWhenAnotherThreadSignals() throws {
    let context = try Context()
    let pull = try makeSocket(context, .pull)
    try pull.bind(uniqueInproc())
    let wake = try WakeUp()
    let poller = Poller()
    let socketIndex = poller.add(pull, events: .in)
    let wakeIndex = poller.add(fd: wake.fd, events: .in)
    #expect(try poller.poll(timeoutMilliseconds: 0) == 0)

    let clock = ContinuousClock()
    let start = clock.now
    onThread {
        usleep(20_000)
        wake.signal()
    }
    #expect(try poller.poll(timeoutMilliseconds: 5000) == 1)
    #expect(clock.now - start < .seconds(4))
    #expect(poller.revents(wakeIndex).contains(.in))
    #expect(poller.revents(socketIndex).isEmpty)

    wake.drain()
    #expect(try poller.poll(timeoutMilliseconds: 0) == 0)
}

@Test func wakeUpDrainClearsManyConcurrentSignals() throws {
    let wake = try WakeUp()
    let finished = DispatchSemaphore(value: 0)
    for _ in 0..<4 {
        onThread {
            for _ in 0..<20_000 { wake.signal() }
            finished.signal()
        }
    }
    for _ in 0..<4 { #expect(finished.wait(timeout: .now() + 5) == .success) }

    let poller = Poller()
    let index = poller.add(fd: wake.fd, events: .in)
    #expect(try poller.poll(timeoutMilliseconds: 0) == 1)
    #expect(poller.revents(index) == .in)
    wake.drain()
    #expect(try poller.poll(timeoutMilliseconds: 0) == 0)
}

@Test func pollerReportsReadableAndWritableSockets() throws {
    let context = try Context()
    let (push, pull) = try pushPull(context)

    let poller = Poller()
    let pullIndex = poller.add(pull, events: .in)
    let pushIndex = poller.add(push, events: .out)
    #expect(try poller.poll(timeoutMilliseconds: 0) == 1)
    #expect(poller.revents(pushIndex) == .out)
    #expect(poller.revents(pullIndex).isEmpty)

    try push.send([bytes("ready")])
    #expect(try poller.poll(timeoutMilliseconds: 2000) == 2)
    #expect(poller.revents(pullIndex) == .in)
    #expect(try pull.receive() == [bytes("ready")])
}

@Test func pollingAClosedSocketThrowsInsteadOfTouchingFreedMemory() throws {
    let context = try Context()
    let pull = try makeSocket(context, .pull)
    let poller = Poller()
    poller.add(pull, events: .in)
    pull.close()
    let error = #expect(throws: ZMQError.self) { try poller.poll(timeoutMilliseconds: 0) }
    #expect(error?.code == ENOTSOCK)
}
