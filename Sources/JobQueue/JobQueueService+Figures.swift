import Proto
import RPC

extension JobQueueService {
    /// The queues' counts for Metrics/Stats and the scrape endpoint (one read on the reader's
    /// thread: the same queries as JobQueue/Stats, cheap at millions of DONE jobs), labelled
    /// queue="…"; nothing when the store is closed.
    public func figures() async -> [Figure] {
        let names = queueNames
        let now = clock.nowMilliseconds()
        let all: [(String, JobStatsResponse)]
        do {
            all = try await reader.read { jobs in
                try jobs.snapshot {
                    try names.map { name in
                        var request = JobStatsRequest()
                        request.queue = name
                        return (name, try jobs.stats(request, now: now))
                    }
                }
            }
        } catch {
            return []
        }
        return all.flatMap { name, stats -> [Figure] in
            let queue = ["queue": name]
            return [
                Figure("homepwner_queue_ready", "Jobs QUEUED and due now.", labels: queue, value: Double(stats.ready)),
                Figure("homepwner_queue_scheduled", "Jobs QUEUED, waiting for a retry's backoff.", labels: queue, value: Double(stats.scheduled)),
                Figure("homepwner_queue_leased", "Jobs RUNNING under a worker's lease.", labels: queue, value: Double(stats.leased)),
                Figure("homepwner_queue_done", "Jobs DONE and not yet pruned.", labels: queue, value: Double(stats.done)),
                Figure("homepwner_queue_dead", "Jobs DEAD: out of attempts or failed for good.", labels: queue, value: Double(stats.dead)),
                Figure("homepwner_queue_oldest_ready_age_seconds", "How long the oldest ready job has waited.",
                       labels: queue, value: Double(stats.oldestReadyAgeMs) / 1000),
                Figure("homepwner_queue_paused", "1 while the queue is paused.", labels: queue, value: stats.paused ? 1 : 0),
            ]
        }
    }
}
