/// A long-running part of a process, run by a ``ServiceGroup``.
public protocol Service: Sendable {
    /// A short name used in logs, for example `"rpc-server"`.
    var name: String { get }

    /// Runs the service until its task is cancelled.
    ///
    /// Return promptly (without throwing) once the task is cancelled: that is a graceful stop.
    /// Throw to report a failure; the group then stops the other services.
    func run() async throws
}
