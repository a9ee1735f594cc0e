import RPC

/// The RPCError a call threw, or nil when it succeeded (a helper: `catch let e as RPCError`
/// inside async tests crashes the 6.3 compiler).
///
/// Swift 6.3 miscompiles a closure passed inside `#expect(…)` within another closure: a later
/// closure in that closure can run its body instead (a duplicate symbol; seen as a call made
/// with the wrong request and options). Keep `#expect(await rpcError { … })` at the test's top
/// level, or call a helper function from inside closures.
public func rpcError<T>(_ body: () async throws -> T) async -> RPCError? {
    do {
        _ = try await body()
        return nil
    } catch let error as RPCError {
        return error
    } catch {
        return RPCError(.unknown, "not an RPCError: \(error)")
    }
}
