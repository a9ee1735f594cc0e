import CLISupport
import Proto
import Testing

/// A batch's progress as people see it, and the exit code its end means.
struct BatchProgressTests {
    static func batch(total: Int64, done: Int64, dead: Int64, rate: Double) -> JobBatch {
        var batch = JobBatch()
        batch.batchId = "7"
        batch.queue = "thumbnails"
        batch.total = total
        batch.done = done
        batch.dead = dead
        batch.pending = total - done - dead
        batch.ratePerSecond = rate
        return batch
    }

    @Test func exitCodeWaitsForThePendingJobsThenSaysWhetherAnyIsDead() {
        #expect(BatchProgress.exitCode(Self.batch(total: 10, done: 9, dead: 0, rate: 1)) == nil)
        #expect(BatchProgress.exitCode(Self.batch(total: 10, done: 5, dead: 4, rate: 1)) == nil)
        #expect(BatchProgress.exitCode(Self.batch(total: 10, done: 10, dead: 0, rate: 1)) == 0)
        #expect(BatchProgress.exitCode(Self.batch(total: 10, done: 9, dead: 1, rate: 1)) == BatchProgress.deadJobsExitCode)
        #expect(BatchProgress.exitCode(Self.batch(total: 0, done: 0, dead: 0, rate: 0)) == 0)
        // Distinct from the codes a failed call exits with (1…6).
        #expect(!(0...6).contains(BatchProgress.deadJobsExitCode))
    }

    @Test func barShowsTheFinishedShareCountsRateAndTimeLeft() {
        let quarter = BatchProgress.bar(Self.batch(total: 1000, done: 247, dead: 3, rate: 12.5), width: 20)
        #expect(quarter == "[#####...............]  25%  250/1000 done, 3 dead  12.5 jobs/s  1 min left")
        let finished = BatchProgress.bar(Self.batch(total: 4, done: 3, dead: 1, rate: 2), width: 4)
        #expect(finished == "[####] 100%  4/4 done, 1 dead  2.0 jobs/s  done")
        let empty = BatchProgress.bar(Self.batch(total: 0, done: 0, dead: 0, rate: 0), width: 4)
        #expect(empty.hasPrefix("[####] 100%  0/0 done"))
    }

    @Test func lineForLogsSaysPendingAndAnUnknownTimeBeforeTheFirstJobFinished() {
        let start = BatchProgress.line(Self.batch(total: 500, done: 0, dead: 0, rate: 0))
        #expect(start == "0/500 finished (0 dead), 500 pending, 0.0 jobs/s, time left unknown")
        let later = BatchProgress.line(Self.batch(total: 500, done: 100, dead: 0, rate: 4))
        #expect(later == "100/500 finished (0 dead), 400 pending, 4.0 jobs/s, 1 min left")
    }

    @Test func secondsLeftIsPendingOverRate() {
        #expect(BatchProgress.secondsLeft(Self.batch(total: 100, done: 40, dead: 10, rate: 5)) == 10)
        #expect(BatchProgress.secondsLeft(Self.batch(total: 100, done: 0, dead: 0, rate: 0)) == nil)
        #expect(BatchProgress.secondsLeft(Self.batch(total: 100, done: 99, dead: 1, rate: 0)) == 0)
    }
}
