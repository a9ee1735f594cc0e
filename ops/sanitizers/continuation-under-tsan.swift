// Does ThreadSanitizer see a continuation's resume happen before the task goes on? 2,000 times a
// task makes a continuation, a new thread fills an array and resumes it with the array while the
// task is still inside the closure (so resume runs before the task awaits), and the task then
// reads the array: no race by construction. Build and run (RELIABILITY.md, Sanitizers):
//   swiftc -O -parse-as-library -sanitize=thread -D HOMEPWNER_TSAN \
//     ops/sanitizers/continuation-under-tsan.swift Sources/Locking/*.swift -o /tmp/continuation-under-tsan
//   /tmp/continuation-under-tsan plain     # withCheckedContinuation: TSan reports races
//   /tmp/continuation-under-tsan visible   # Locking's withVisibleCheckedContinuation: no report
// The Concurrency runtime releases the task on resume but acquires it only when the task had
// suspended first; resumed before its await, the task goes on without the acquire.
import Foundation

final class Box: @unchecked Sendable { var bytes: [UInt8] = [] }

@main enum ContinuationUnderTSan {
    static func main() async {
        let mode = CommandLine.arguments.dropFirst().first ?? "plain"
        var sum = 0
        for i in 0..<2000 {
            let fill = { @Sendable (continuation: CheckedContinuation<Box, Never>) in
                Thread {
                    let box = Box()
                    box.bytes = [UInt8](repeating: UInt8(i & 255), count: 64)
                    continuation.resume(returning: box)
                }.start()
                usleep(200)
            }
            let box = mode == "visible"
                ? await withVisibleCheckedContinuation { fill($0) }
                : await withCheckedContinuation { fill($0) }
            sum += Int(box.bytes[3])
        }
        print(mode, "sum", sum)
    }
}
