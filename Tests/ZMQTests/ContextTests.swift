import Foundation
import Testing
import ZMQ

@Test func contextDeinitDoesNotHangWithUndeliverableMessages() throws {
    // The server lives in its own context and never reads, so the client's queue cannot drain.
    let serverContext = try Context()
    let server = try makeSocket(serverContext, .pull)
    try server.setReceiveHighWaterMark(1)
    try server.bind("tcp://127.0.0.1:*")
    let endpoint = try server.lastEndpoint

    let result = Handoff<String>()
    onThread {
        do {
            let context = try Context()
            let push = try Socket(context, .push)
            try push.setSendHighWaterMark(1)
            try push.setSendTimeout(100)
            try push.connect(endpoint)
            // Send until the pipe, both TCP buffers and the server's queue are full.
            let chunk = [UInt8](repeating: 1, count: 4 << 20)
            var stuck = false
            for _ in 0..<100 where !stuck {
                do { try push.send([chunk]) } catch let error as ZMQError where error.isAgain { stuck = true }
            }
            guard stuck else { return result.finish("never filled the queues") }
            push.close()
            // `context` is released here: zmq_ctx_term must not wait for the queued message.
        } catch {
            return result.finish("\(error)")
        }
        result.finish("terminated")
    }
    #expect(result.wait(seconds: 5) == "terminated")
}

@Test func socketsKeepTheirContextAliveAfterCallerDropsIt() {
    let result = Handoff<String>()
    onThread {
        do {
            var pull: Socket?
            var push: Socket?
            do {
                let context = try Context()
                let endpoint = uniqueInproc("keepalive")
                pull = try makeSocket(context, .pull)
                try pull?.bind(endpoint)
                push = try makeSocket(context, .push)
                try push?.connect(endpoint)
            }
            // The caller's context reference is gone; the sockets still work through theirs.
            try push?.send([bytes("still alive")])
            let received = try pull?.receive()
            // Releasing the last socket terminates the context; this must not hang.
            pull = nil
            push = nil
            result.finish(received == [bytes("still alive")] ? "ok" : "wrong message \(String(describing: received))")
        } catch {
            result.finish("\(error)")
        }
    }
    #expect(result.wait(seconds: 3) == "ok")
}

@Test func contextShutdownInterruptsBlockingReceiveWithTerminated() throws {
    let context = try Context()
    let bound = DispatchSemaphore(value: 0)
    let result = Handoff<ZMQError?>()
    onThread {
        do {
            let pull = try Socket(context, .pull)
            defer { pull.close() }
            try pull.bind(uniqueInproc("shutdown"))
            bound.signal()
            _ = try pull.receive()
            result.finish(nil)
        } catch {
            result.finish(error as? ZMQError)
        }
    }
    #expect(bound.wait(timeout: .now() + 3) == .success)
    context.shutdown()
    let error = try #require(result.wait(seconds: 3))
    #expect(error?.isTerminated == true)
}
