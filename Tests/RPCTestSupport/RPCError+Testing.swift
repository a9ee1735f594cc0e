import RPC

/// The RPCError a call threw, or nil when it succeeded (a helper: `catch let e as RPCError`
/// inside async tests crashes the 6.3 compiler).
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
