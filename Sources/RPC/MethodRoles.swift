import CurveAuth
import Proto

/// Which role a key needs to call each method: the one table the servers enforce when CURVE
/// keys are configured (docs/protocol.md, "Keys and roles").
///
/// - reader: reads (get, list, renditions, stats, health);
/// - worker: a reader's calls, plus what a worker does: lease, extend, complete and fail jobs;
///   put and get images; attach photos, and undo its own attach (detach, delete an image it
///   stored when a capture fails for good);
/// - admin: everything, including every method not listed here (new methods are admin-only
///   until this table says otherwise, so a method never opens by accident).
public enum MethodRoles {
    /// The role a call of `path` needs (admin for any path not listed).
    public static func required(for path: String) -> Role {
        table[path] ?? .admin
    }

    /// The methods open to readers and workers; every other method needs admin.
    public static let table: [String: Role] = {
        var table: [String: Role] = [:]
        let reader: [any AnyProtoMethod] = [
            HealthRPC.check, MetricsRPC.stats,
            ItemServiceRPC.getItem, ItemServiceRPC.listItems, ItemServiceRPC.stats,
            ImageServiceRPC.getImage, ImageServiceRPC.statImage, ImageServiceRPC.listImages,
            ImageServiceRPC.getRendition, ImageServiceRPC.cacheStats, ImageServiceRPC.stats,
            CaptureServiceRPC.listSources, CaptureServiceRPC.getCaptureJob,
            JobQueueRPC.stats, JobQueueRPC.listJobs, JobQueueRPC.getJob, JobQueueRPC.getBatch,
        ]
        let worker: [any AnyProtoMethod] = [
            JobQueueRPC.lease, JobQueueRPC.extend, JobQueueRPC.complete, JobQueueRPC.fail,
            ImageServiceRPC.putImage, ImageServiceRPC.beginUpload, ImageServiceRPC.appendUpload,
            ImageServiceRPC.commitUpload, ImageServiceRPC.abortUpload,
            ItemServiceRPC.attachPhoto,
            // A capture that fails for good undoes what it did (CaptureWorker's cleanup).
            ItemServiceRPC.detachPhoto, ImageServiceRPC.deleteImage,
        ]
        for method in reader { table[method.path] = .reader }
        for method in worker { table[method.path] = .worker }
        return table
    }()
}

extension Role {
    /// Whether a key of this role may call a method that needs `required`: admin calls
    /// everything, a worker a worker's and a reader's methods, a reader only a reader's.
    public func mayCall(requiring required: Role) -> Bool {
        switch self {
        case .admin: true
        case .worker: required != .admin
        case .reader: required == .reader
        }
    }
}
