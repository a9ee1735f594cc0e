/// What a key may do once its connection is authenticated; the RPC layer decides what each
/// role is allowed to call (each method's `allow` options in the .proto, `MethodRoles`).
public enum Role: String, Sendable, CaseIterable, Comparable {
    /// Everything, including the admin methods.
    case admin
    /// A capture worker: leases and finishes capture jobs, and stores and attaches what the
    /// capture jobs it holds make, nothing else.
    case captureWorker = "capture-worker"
    /// A thumbnail worker: leases and finishes thumbnail jobs (its results are stored with the
    /// job it completes), and reads.
    case thumbnailWorker = "thumbnail-worker"
    /// Either kind of worker: the one key `homepwner keys init` made for every worker before the
    /// kinds had keys of their own. Its effects are bound to the jobs it holds all the same.
    case worker
    /// Read-only calls.
    case reader

    /// "admin, capture-worker, thumbnail-worker, worker or reader", for error messages.
    public static var spelledOut: String {
        let names = allCases.map(\.rawValue)
        return names.dropLast().joined(separator: ", ") + " or " + names.last!
    }

    public static func < (a: Role, b: Role) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
    }
}
