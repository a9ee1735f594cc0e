/// Polls `condition` every millisecond for up to 10 s; whether it came true. For a state that
/// another thread reaches (a task in line, a body running), not for timing.
public func eventually(_ condition: () -> Bool) async throws -> Bool {
    for _ in 0..<10_000 {
        if condition() { return true }
        try await Task.sleep(for: .milliseconds(1))
    }
    return condition()
}

/// Polls `condition` every 10 ms for up to `seconds`; whether it came true. For what another
/// process does (a line it prints), which a loaded machine may delay by seconds.
public func eventually(within seconds: Int, _ condition: () -> Bool) async throws -> Bool {
    let end = ContinuousClock.now + .seconds(seconds)
    while ContinuousClock.now < end {
        if condition() { return true }
        try await Task.sleep(for: .milliseconds(10))
    }
    return condition()
}
