/// What a key may do once its connection is authenticated; the RPC layer decides what each
/// role is allowed to call.
public enum Role: String, Sendable, CaseIterable, Comparable {
    /// Everything, including the admin methods.
    case admin
    /// A worker: leases and finishes jobs.
    case worker
    /// Read-only calls.
    case reader

    /// "admin, worker or reader", for error messages.
    public static var spelledOut: String {
        let names = allCases.map(\.rawValue)
        return names.dropLast().joined(separator: ", ") + " or " + names.last!
    }

    public static func < (a: Role, b: Role) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
    }
}
