import CurveAuth
import Proto

/// Who may call what when CURVE keys are configured (docs/protocol.md, "Keys and roles"): each
/// method's `option (allow) = …;` in the .proto (options.proto) says which kinds of key besides
/// admin may call it, and the generated method handles carry it (`AnyProtoMethod.callers`); a
/// method with none is admin-only, so a method never opens by accident.
///
/// - reader: every method allowed to `CALLER_READER` (the reads);
/// - capture-worker: a reader's, plus those allowed to `CALLER_CAPTURE_WORKER` (its queue's jobs;
///   storing, attaching and undoing what the capture jobs it holds make);
/// - thumbnail-worker: a reader's, plus those allowed to `CALLER_THUMBNAIL_WORKER` (its queue's jobs);
/// - worker: both kinds of worker's (the key `keys init` made before the kinds had keys of their own);
/// - admin: everything.
///
/// The method check is the first half: a worker's handlers then bind what it does to the jobs
/// it holds (its queue only; a capture's stores and attaches only for the job it leased).
public enum MethodRoles {
    /// The callers of `path` among every method of the protocol; [] (admin only) for one it does not know.
    public static func callers(of path: String) -> [Caller] {
        byPath[path] ?? []
    }

    /// The callers the .proto declares for `path`; nil for a path it does not declare.
    static func declared(_ path: String) -> [Caller]? { byPath[path] }

    private static let byPath: [String: [Caller]] = {
        var table: [String: [Caller]] = [:]
        for method in ProtoCatalog.methods { table[method.path] = method.callers }
        return table
    }()

    /// "admin and readers", "admin, capture workers and thumbnail workers", for messages.
    public static func describe(_ callers: [Caller]) -> String {
        let kinds = ["admin"] + callers.map { caller -> String in
            switch caller {
            case .reader: "every allowed key (reader)"
            case .captureWorker: "capture-worker"
            case .thumbnailWorker: "thumbnail-worker"
            default: "caller \(caller.rawValue)"
            }
        }
        return kinds.count == 1 ? "admin only" : kinds.dropLast().joined(separator: ", ") + " and " + kinds.last!
    }
}

extension Role {
    /// Whether a key of this role may call a method whose .proto allows `callers` (besides admin).
    public func mayCall(_ callers: [Caller]) -> Bool {
        switch self {
        case .admin: true
        case .reader: callers.contains(.reader)
        case .captureWorker: callers.contains(.reader) || callers.contains(.captureWorker)
        case .thumbnailWorker: callers.contains(.reader) || callers.contains(.thumbnailWorker)
        case .worker: !callers.isEmpty
        }
    }

    /// Whether this role works jobs of `queue` (Lease, Extend, Complete, Fail): each worker kind
    /// the queues the protocol gives it (`JobQueueSpec.workedBy`), the old shared worker key
    /// every worked queue; admin any; none the queues a service runs itself.
    public func works(queue: String) -> Bool {
        let workedBy = JobQueueSpec.named(queue)?.workedBy
        switch self {
        case .admin: return true
        case .reader: return false
        case .captureWorker: return workedBy == .captureWorker
        case .thumbnailWorker: return workedBy == .thumbnailWorker
        case .worker: return workedBy != nil
        }
    }
}

extension RPCContext {
    /// Whether the caller's key is a worker's (capture-worker, thumbnail-worker or worker): what
    /// it changes is then bound to the jobs it holds, which the handler checks.
    public var callerIsWorker: Bool {
        switch caller?.role {
        case .captureWorker?, .thumbnailWorker?, .worker?: true
        default: false
        }
    }

    /// Throws PERMISSION_DENIED unless the caller may work jobs of `queue` (Lease, Extend,
    /// Complete, Fail): the method check lets every worker kind in, this binds each to its queue.
    public func checkWorks(queue: String) throws(RPCError) {
        guard let caller, !caller.role.works(queue: queue) else { return }
        let who = caller.name.map { "key \"\($0)\" (\(caller.role.rawValue))" } ?? "a \(caller.role.rawValue) key"
        let kinds = JobQueueSpec.all.compactMap { spec in spec.worker.map { "\($0) keys work \(spec.name) jobs" } }
        throw .permissionDenied("\(who) may not work jobs of queue \(queue): " + kinds.joined(separator: ", "))
    }
}
