import Foundation
import Runtime

/// Runs `body`, a synchronous stop that may wait for tasks (a service's calls in flight, a
/// runner's jobs), on a thread of its own and waits for it without holding a thread of the
/// shared pool meanwhile.
///
/// Tests run many at once on a pool of one thread per core: a stop called on a pool thread
/// blocks it, and two such stops could hold up every task of the process, the very ones the
/// stops wait for, until their grace periods run out.
public func offThePool(_ body: @escaping @Sendable () -> Void) async {
    await onThreadOfItsOwn("off-the-pool", body)
}
