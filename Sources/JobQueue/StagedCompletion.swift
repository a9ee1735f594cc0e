import Proto

/// The part of a job's completion that a queue's ``JobQueueService/Completion`` staged: the
/// rows to write in the transaction that marks the job DONE, and what to do once that
/// transaction has ended.
///
/// A result that lives in files (thumbnails) is written to temporary files by the completion
/// before the transaction, added as rows by `effect` inside it (only when the lease is still
/// the job's: a late worker stores nothing), and moved into place by `finish` after it, or
/// removed when the transaction did not commit.
public struct StagedCompletion<Host>: Sendable {
    /// Runs inside the transaction that completes the job, after its lease was checked: writes
    /// the host's rows and returns the bytes kept as the job's result. A throw rolls the
    /// completion back (the job stays RUNNING) and answers the worker that error.
    public var effect: @Sendable (_ host: Host, _ job: Job, _ result: [UInt8]) throws -> [UInt8]
    /// Runs after the transaction, before the worker is answered: `committed` is true when
    /// `effect`'s writes were committed with the job, false when nothing was (refused, rolled
    /// back, or a repeat of a completion already made).
    public var finish: @Sendable (_ committed: Bool) async -> Void

    /// A completion staged.
    public init(
        effect: @escaping @Sendable (_ host: Host, _ job: Job, _ result: [UInt8]) throws -> [UInt8],
        finish: @escaping @Sendable (_ committed: Bool) async -> Void = { _ in }
    ) {
        self.effect = effect
        self.finish = finish
    }
}
