import Foundation
import Locking
import Testing
import ZMQ

@Test func framesReceivedInPlaceMatchTheCopiesAndOutliveTheSocket() throws {
    let context = try Context()
    let (push, pull) = try pushPull(context)

    // Small frames (kept inside zmq_msg_t), an empty one and a large one (its own buffer).
    let large = (0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
    let message: [[UInt8]] = [bytes("id"), [], bytes("header"), large]
    try push.send(message)
    let frames = try #require(try pull.receiveFrames())
    #expect(frames.map(\.count) == message.map(\.count))
    #expect(frames.map(\.bytes) == message)
    #expect(frames[1].isEmpty && !frames[3].isEmpty)
    frames[3].withUnsafeBytes { buffer in
        #expect(buffer.count == large.count && buffer[2_999_999] == large[2_999_999])
    }
    frames[1].withUnsafeBytes { #expect($0.isEmpty) }
    // Nothing queued: nil at once with dontWait.
    #expect(try pull.receiveFrames(dontWait: true) == nil)
    push.close()
    pull.close()
    // Frames own their messages: still readable after their socket is gone, on another thread.
    let copy = try #require(frames.last)
    let done = DispatchSemaphore(value: 0)
    let seen = Locked(-1)
    Thread {
        let value = copy.withUnsafeBytes { Int($0[1]) }
        seen.withLock { $0 = value }
        done.signal()
    }.start()
    done.wait()
    #expect(seen.withLock { $0 } == Int(large[1]))
    #expect(Frame([1, 2, 3]).bytes == [1, 2, 3] && Frame([]).isEmpty)
}
