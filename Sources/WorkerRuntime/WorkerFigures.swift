import Proto
import RPC

extension JobRunner {
    /// The runner's counts for Metrics/Stats and the scrape endpoint, labelled queue="…".
    public func figures() -> [Figure] {
        let (completed, failed) = counts
        let running = runningCount
        let queue = ["queue": configuration.queue]
        return [
            Figure("homepwner_worker_jobs_completed_total", "Jobs this worker completed.", .counter, labels: queue, value: Double(completed)),
            Figure("homepwner_worker_jobs_failed_total", "Jobs this worker failed (to retry, or for good).", .counter,
                   labels: queue, value: Double(failed)),
            Figure("homepwner_worker_jobs_running", "Jobs leased and running now.", labels: queue, value: Double(running)),
            Figure("homepwner_worker_job_slots", "Jobs this worker runs at once.", labels: queue, value: Double(configuration.concurrency)),
        ]
    }
}

extension ComputeSlots {
    /// The slots' use for Metrics/Stats and the scrape endpoint.
    public func figures() -> [Figure] {
        let (running, bytes, waiting) = usage
        return [
            Figure("homepwner_worker_compute_running", "Jobs in their CPU-heavy part now.", value: Double(running)),
            Figure("homepwner_worker_compute_waiting", "Jobs waiting for a compute slot or memory budget.", value: Double(waiting)),
            Figure("homepwner_worker_compute_bytes", "Estimated working memory of the jobs computing now.", value: Double(bytes)),
            Figure("homepwner_worker_compute_budget_bytes", "The memory budget of jobs computing at once.",
                   value: budgetBytes == .max ? 0 : Double(budgetBytes)),
        ]
    }
}
