import Proto
import RPC

extension JobRunner {
    /// The runner's counts for Metrics/Stats and the scrape endpoint, labelled queue="…".
    public func figures() -> [Figure] {
        let (completed, failed) = counts
        let running = runningCount
        let (waitingForDisk, busyRetries, diskFullRetries) = state.withLock {
            ($0.waitingForDisk.count, $0.busyRetries, $0.diskFullRetries)
        }
        let queue = ["queue": configuration.queue]
        return [
            Figure("homepwner_worker_jobs_completed_total", "Jobs this worker completed.", .counter, labels: queue, value: Double(completed)),
            Figure("homepwner_worker_jobs_failed_total", "Jobs this worker failed (to retry, or for good).", .counter,
                   labels: queue, value: Double(failed)),
            Figure("homepwner_worker_jobs_running", "Jobs leased and running now.", labels: queue, value: Double(running)),
            Figure("homepwner_worker_job_slots", "Jobs this worker runs at once.", labels: queue, value: Double(configuration.concurrency)),
            Figure("homepwner_worker_jobs_waiting_disk_full", "Jobs held until a service's full disk has room.",
                   labels: queue, value: Double(waitingForDisk)),
            Figure("homepwner_worker_report_retries_total", "Completions and failures sent again: the service was busy, or its disk full.",
                   .counter, labels: queue.merging(["reason": "busy"]) { $1 }, value: Double(busyRetries)),
            Figure("homepwner_worker_report_retries_total", "Completions and failures sent again: the service was busy, or its disk full.",
                   .counter, labels: queue.merging(["reason": "disk_full"]) { $1 }, value: Double(diskFullRetries)),
        ]
    }

    /// Health/Check's conditions: "disk_full" while jobs are held until a service's full disk has room.
    public func healthConditions() -> [HealthCondition] {
        let (waiting, since) = state.withLock { ($0.waitingForDisk, $0.waitingForDiskSince) }
        guard let last = waiting.values.first else { return [] }
        let jobs = waiting.count == 1 ? "1 job" : "\(waiting.count) jobs"
        var condition = HealthCondition()
        condition.name = "disk_full"
        condition.message = "\(jobs) of queue \(configuration.queue) wait for a service's full disk (\(last)): tried again every \(Self.diskFullMaxBackoffMilliseconds / 1000) s at most while their leases hold, never failed for it; free space on that service's disk"
        condition.sinceUnixMs = UInt64(max(0, since))
        return [condition]
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
