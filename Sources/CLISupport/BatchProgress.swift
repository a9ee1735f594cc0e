import Foundation
import Proto

/// How far a batch of jobs (`JobQueue/GetBatch`) has come, for people: a bar redrawn in place
/// on a terminal, a line otherwise, the time left; and the exit code its end means.
public enum BatchProgress {
    /// The exit code of a watched batch that finished with dead jobs (none dead: 0).
    public static let deadJobsExitCode: Int32 = 7

    /// The exit code once the batch has no pending jobs: 0 when none is dead, else
    /// ``deadJobsExitCode``; nil while some are still pending.
    public static func exitCode(_ batch: JobBatch) -> Int32? {
        guard batch.pending <= 0 else { return nil }
        return batch.dead > 0 ? deadJobsExitCode : 0
    }

    /// Seconds until the pending jobs are done at the batch's rate so far; nil while nothing
    /// has finished (no rate yet), 0 once nothing is pending.
    public static func secondsLeft(_ batch: JobBatch) -> Double? {
        guard batch.pending > 0 else { return 0 }
        guard batch.ratePerSecond > 0 else { return nil }
        return Double(batch.pending) / batch.ratePerSecond
    }

    /// "[#######.......................]  25%  250/1000 done, 3 dead  12.5 jobs/s  1 min left",
    /// to redraw in place (the caller writes "\r" before it).
    public static func bar(_ batch: JobBatch, width: Int = 30) -> String {
        let finished = batch.done + batch.dead
        let fraction = batch.total > 0 ? Double(finished) / Double(batch.total) : 1
        return ProgressText.bar(fraction: fraction, width: width)
            + String(format: " %3d%%  ", Int(fraction * 100))
            + "\(finished)/\(batch.total) done, \(batch.dead) dead  \(rate(batch))  \(timeLeft(batch))"
    }

    /// "250/1000 finished (3 dead), 750 pending, 12.5 jobs/s, 1 min left": one line of a log.
    public static func line(_ batch: JobBatch) -> String {
        "\(batch.done + batch.dead)/\(batch.total) finished (\(batch.dead) dead), \(batch.pending) pending, "
            + "\(rate(batch)), \(timeLeft(batch))"
    }

    /// "12.5 jobs/s".
    public static func rate(_ batch: JobBatch) -> String {
        String(format: "%.1f jobs/s", batch.ratePerSecond)
    }

    /// "1 min left", "done" once nothing is pending, "time left unknown" before the first job finished.
    public static func timeLeft(_ batch: JobBatch) -> String {
        guard let seconds = secondsLeft(batch) else { return "time left unknown" }
        guard batch.pending > 0 else { return "done" }
        return HumanDuration.text(milliseconds: Int64((seconds * 1000).rounded(.up))) + " left"
    }
}
