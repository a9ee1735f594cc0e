// Is a ThreadSanitizer report on Synchronization.Mutex a race? Four threads add 1 to a counter
// 100,000 times each, every time inside the lock, so there is no race by construction, and the
// total printed shows the lock worked. Build and run (RELIABILITY.md, Sanitizers):
//   swiftc -O -sanitize=thread ops/sanitizers/mutex-under-tsan.swift -o /tmp/mutex-under-tsan
//   /tmp/mutex-under-tsan mutex    # Synchronization.Mutex: TSan reports races
//   /tmp/mutex-under-tsan nslock   # the same with NSLock (pthread_mutex): no report
// Mutex on Linux locks with futex system calls, which ThreadSanitizer does not intercept, so it
// sees no happens-before between the threads' accesses to the value the lock guards.
import Foundation
import Synchronization

final class WithMutex: Sendable {
    let mutex = Mutex(0)
    func add() { mutex.withLock { $0 += 1 } }
    var value: Int { mutex.withLock { $0 } }
}

final class WithNSLock: @unchecked Sendable {
    let lock = NSLock()
    var count = 0
    func add() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}

let useMutex = CommandLine.arguments.dropFirst().first != "nslock"
let withMutex = WithMutex()
let withNSLock = WithNSLock()
let threads = (0..<4).map { _ in
    Thread {
        for _ in 0..<100_000 { if useMutex { withMutex.add() } else { withNSLock.add() } }
    }
}
threads.forEach { $0.start() }
while (useMutex ? withMutex.value : withNSLock.value) < 400_000 { usleep(1000) }
print(useMutex ? "Mutex" : "NSLock", "total", useMutex ? withMutex.value : withNSLock.value)
