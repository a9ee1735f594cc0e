// Is a ThreadSanitizer report on Synchronization.Mutex a race? Four threads add 1 to a counter
// 100,000 times each, every time inside the lock, so there is no race by construction, and the
// total printed shows the lock worked. Build and run (RELIABILITY.md, Sanitizers):
//   swiftc -O -parse-as-library -sanitize=thread -D HOMEPWNER_TSAN \
//     ops/sanitizers/mutex-under-tsan.swift Sources/Locking/Locked.swift -o /tmp/mutex-under-tsan
//   /tmp/mutex-under-tsan mutex    # Synchronization.Mutex: TSan reports races
//   /tmp/mutex-under-tsan nslock   # the same with NSLock (pthread_mutex): no report
//   /tmp/mutex-under-tsan locked   # the project's Locked (Sources/Locking) with HOMEPWNER_TSAN: no report
// Mutex on Linux locks with futex system calls, which ThreadSanitizer does not intercept, so it
// sees no happens-before between the threads' accesses to the value the lock guards. Locked is
// that Mutex plus __tsan_acquire/__tsan_release under -D HOMEPWNER_TSAN.
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

final class WithLocked: Sendable {
    let locked = Locked(0)
    func add() { locked.withLock { $0 += 1 } }
    var value: Int { locked.withLock { $0 } }
}

@main enum MutexUnderTSan {
    static func main() {
        let kind = CommandLine.arguments.dropFirst().first ?? "mutex"
        let add: @Sendable () -> Void
        let value: @Sendable () -> Int
        switch kind {
        case "nslock": let lock = WithNSLock(); add = { lock.add() }; value = { lock.value }
        case "locked": let lock = WithLocked(); add = { lock.add() }; value = { lock.value }
        default: let lock = WithMutex(); add = { lock.add() }; value = { lock.value }
        }
        let threads = (0..<4).map { _ in Thread { for _ in 0..<100_000 { add() } } }
        threads.forEach { $0.start() }
        while value() < 400_000 { usleep(1000) }
        print(kind, "total", value())
    }
}
