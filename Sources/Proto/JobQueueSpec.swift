/// A job queue of the protocol (docs/protocol.md, "Job queues"): its name on the wire, the
/// service that serves it, and the kind of worker key that leases its jobs. The one place the
/// queues are named: the services, the key roles and the CLI read them from here.
public struct JobQueueSpec: Sendable, Hashable, CustomStringConvertible {
    /// The service a queue lives with: the one whose work its jobs are.
    public enum Host: String, Sendable {
        case item, image
    }

    /// The queue's name on the wire.
    public let name: String
    /// The service that serves it over JobQueue.
    public let host: Host
    /// The kind of worker key that works its jobs over JobQueue; nil for a queue its service
    /// runs itself (admin still may).
    public let workedBy: Caller?
    /// The executable that works its jobs, for messages ("capture-worker"); nil when none does.
    public let worker: String?

    public var description: String { name }

    /// One job per Capture call, on item-service, worked by capture-worker.
    public static let capture = JobQueueSpec(name: "capture", host: .item, workedBy: .captureWorker, worker: "capture-worker")
    /// One job per deleted item, on item-service, which delivers them itself.
    public static let cascade = JobQueueSpec(name: "cascade", host: .item, workedBy: nil, worker: nil)
    /// One job per stored photo, on image-service, worked by thumbnail-worker.
    public static let thumbnails = JobQueueSpec(
        name: "thumbnails", host: .image, workedBy: .thumbnailWorker, worker: "thumbnail-worker")

    /// Every queue of the protocol.
    public static let all: [JobQueueSpec] = [.capture, .cascade, .thumbnails]

    /// The queue named `name`; nil for a name the protocol does not have.
    public static func named(_ name: String) -> JobQueueSpec? {
        all.first { $0.name == name }
    }
}
