import CLISupport
import Foundation
import Proto
import RPC
import Runtime

/// What to tell someone waiting on a queue's jobs when nothing has moved for a while: the
/// queue paused, no worker taking its jobs, workers holding jobs that do not finish, or jobs
/// waiting to be retried. Said once per stall on stderr; the wait goes on.
struct QueueStall {
    /// `--stall-hint S`, on every command that waits for jobs.
    static let option = OptionSpec(
        name: "stall-hint", defaultValue: "30",
        help: "after S seconds in which no job finished, say on stderr why that may be (0: never)", valueName: "S")

    let queue: String
    let seconds: Int
    private var lastChange = ContinuousClock.now
    private var lastProgress: Int64 = -1
    private var said = false

    /// From `--stall-hint`; nil (a usage error printed) when it is not a whole number of seconds.
    init?(queue: String, options: ParsedOptions, command: String) {
        guard let text = options["stall-hint"], let seconds = Int(text), seconds >= 0 else {
            _ = ItemCommand.usageError(command, "--stall-hint '\(options["stall-hint"] ?? "")' is not a number of seconds")
            return nil
        }
        self.queue = queue
        self.seconds = seconds
    }

    /// Notes the progress seen now (a count that grows as jobs finish, or a job's state); returns
    /// the hint to print when nothing has moved for `seconds` and none was printed since.
    mutating func observe(_ progress: Int64, client: RPCClient, timeout: UInt32) async -> String? {
        let now = ContinuousClock.now
        if progress != lastProgress {
            (lastProgress, lastChange, said) = (progress, now, false)
            return nil
        }
        guard seconds > 0, !said, now - lastChange >= .seconds(seconds) else { return nil }
        said = true
        return await Self.hint(queue: queue, idle: seconds, client: client, timeout: timeout)
    }

    /// Why the queue's jobs may not be moving, from JobQueue/Stats.
    static func hint(queue: String, idle: Int, client: RPCClient, timeout: UInt32) async -> String {
        let worker = JobQueueSpec.named(queue)?.worker ?? "worker"
        let waiting = "nothing finished in \(idle) s"
        var request = JobStatsRequest()
        request.queue = queue
        guard let stats = try? await client.call(JobQueueRPC.stats, request, options: .init(timeoutMilliseconds: timeout)) else {
            return "\(waiting), and the queue's figures did not come (JobQueue/Stats): is the service answering?"
        }
        if stats.paused {
            return "\(waiting): the \(queue) queue is paused; `homepwner queue resume \(queue)` lets workers take its jobs again"
        }
        if stats.leased == 0 && stats.ready > 0 {
            let age = HumanDuration.text(milliseconds: stats.oldestReadyAgeMs)
            return "\(waiting): no worker is taking the \(queue) queue's jobs (\(stats.ready) ready, the oldest for \(age)); "
                + "is a \(worker) running, and does it reach this service? `homepwner health all` and the worker's log say"
        }
        if stats.leased > 0 {
            return "\(waiting): \(stats.leased) of the \(queue) queue's jobs are being worked on; a large job, or a worker that "
                + "stopped (its jobs come back when their lease runs out and are tried again)"
        }
        if stats.scheduled > 0 {
            return "\(waiting): \(stats.scheduled) jobs wait to be tried again after failing; "
                + "`homepwner queue ls \(queue)` shows their errors"
        }
        return waiting
    }

    /// The hint as its own line on stderr (after the progress bar, when one is drawn).
    static func print(_ hint: String, afterBar: Bool) {
        FileHandle.standardError.write(Data(((afterBar ? "\n" : "") + "homepwner: \(hint) (still waiting; ^C stops the waiting, not the jobs)\n").utf8))
    }
}
