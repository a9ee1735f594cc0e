import CLISupport
import Foundation
import Proto
import RPC
import Runtime

/// `homepwner queue ls|dead|show`: a queue's jobs, one line each, with their error history, or
/// one job whole (ListJobs, GetJob).
enum QueueJobsCommand {
    static let limitOption = OptionSpec(name: "limit", defaultValue: "100", help: "at most this many jobs", valueName: "N")

    static let listParser = QueueCommand.parser(
        "ls", "Lists a queue's jobs, newest first: those of --state, or running, queued, dead then done ones (ListJobs).",
        [OptionSpec(name: "state", help: "queued, running, done or dead (default: every state)", valueName: "STATE"), limitOption])

    static func list(_ arguments: [String]) async -> Int32 {
        guard let call = QueueCommand.invocation(listParser, arguments, expected: "expected at most one QUEUE")
        else { return HomepwnerCLI.exitCodeOverride }
        let states: [JobState]
        switch call.options["state"]?.lowercased() {
        case nil: states = [.running, .queued, .dead, .done]
        case "queued": states = [.queued]
        case "running": states = [.running]
        case "done": states = [.done]
        case "dead": states = [.dead]
        case let other?: return ItemCommand.usageError("queue ls", "--state \(other): expected queued, running, done or dead")
        }
        return await printJobs(call, states: states, withErrors: false)
    }

    static let deadParser = QueueCommand.parser(
        "dead", "Lists a queue's dead jobs, newest first, each with every failed attempt: when, by which worker, why (ListJobs).",
        [limitOption])

    static func dead(_ arguments: [String]) async -> Int32 {
        guard let call = QueueCommand.invocation(deadParser, arguments, expected: "expected at most one QUEUE")
        else { return HomepwnerCLI.exitCodeOverride }
        return await printJobs(call, states: [.dead], withErrors: true)
    }

    /// Lists up to --limit jobs of `states`: a table, or each job with its errors under it.
    static func printJobs(_ call: QueueCommand.Invocation, states: [JobState], withErrors: Bool) async -> Int32 {
        let limit: Int
        do {
            limit = try call.options.int("limit")
            guard limit > 0 else { throw OptionError.invalidValue(option: "--limit", value: String(limit), reason: "must be ≥ 1") }
        } catch {
            return ItemCommand.usageError(call.command, "\(error)")
        }
        return await call.withClient { client, timeout in
            let jobs = try await jobs(states, queue: call.queue, limit: limit, client: client, timeout: timeout)
            if call.json {
                print("[" + (try jobs.map(QueueCommand.json).joined(separator: ",\n")) + "]")
                return
            }
            guard !jobs.isEmpty else {
                print("no \(states.count == 1 ? states[0].description.lowercased() + " " : "")jobs in \(call.queue)")
                return
            }
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            let header = ["ID", "STATE", "ATTEMPTS", "AGE", "DEDUPE KEY", "LAST ERROR"]
            guard withErrors else {
                printColumns([header] + jobs.map { row($0, now: now) })
                return
            }
            for (index, job) in jobs.enumerated() {
                if index > 0 { print("") }
                printColumns([header, row(job, now: now)])
                printColumns(errorRows(job, indent: "  "))
            }
        }
    }

    static let showParser = QueueCommand.parser(
        "show", "Shows one job: every field, its error history, its payload and result decoded (GetJob).")

    static func show(_ arguments: [String]) async -> Int32 {
        guard let call = QueueCommand.invocation(showParser, arguments, identifiedBy: "JOB_ID") else { return HomepwnerCLI.exitCodeOverride }
        var request = GetJobRequest()
        request.queue = call.queue
        request.jobId = call.arguments[0]
        return await call.withClient { client, timeout in
            let job = try await client.call(JobQueueRPC.getJob, request, options: .init(timeoutMilliseconds: timeout))
            if call.json {
                print(try QueueCommand.json(job))
                return
            }
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            let leased = job.state == .running
                ? "\(job.leaseId) until \(ItemCommand.timestamp(job.leaseExpiresAtMs)) (in \(HumanDuration.text(milliseconds: job.leaseExpiresAtMs - now)))"
                : "-"
            let rows = [
                ["job", job.jobId],
                ["queue", job.queue],
                ["state", job.state.description],
                ["attempts", "\(job.attempts)/\(job.maxAttempts)"],
                ["dedupe key", orDash(job.dedupeKey)],
                ["batch", orDash(job.batchId)],
                ["created", "\(ItemCommand.timestamp(job.createdAtMs)) (\(HumanDuration.text(milliseconds: now - job.createdAtMs)) ago)"],
                ["updated", ItemCommand.timestamp(job.updatedAtMs)],
                ["run at", job.state == .queued ? ItemCommand.timestamp(job.runAtMs) : "-"],
                ["worker", orDash(job.workerId)],
                ["lease", leased],
                ["last error", orDash(job.lastError)],
                ["payload", payload(of: job)],
            ] + result(of: job)
            let errors = errorRows(job, indent: "  ")
            printColumns(rows + [["errors", errors.isEmpty ? "none" : "\(errors.count), oldest first:"]])
            printColumns(errors)
        }
    }

    // MARK: Helpers

    /// Up to `limit` jobs of each of `states` in turn (newest first in each), paging through
    /// ListJobs.
    static func jobs(_ states: [JobState], queue: String, limit: Int, client: RPCClient, timeout: UInt32) async throws -> [Job] {
        var jobs: [Job] = []
        for state in states where jobs.count < limit {
            var request = ListJobsRequest()
            request.queue = queue
            request.state = state
            repeat {
                request.pageSize = Int32(min(1000, limit - jobs.count))
                let page = try await client.call(JobQueueRPC.listJobs, request, options: .init(timeoutMilliseconds: timeout))
                jobs += page.jobs
                request.pageToken = page.nextPageToken
            } while !request.pageToken.isEmpty && jobs.count < limit
        }
        return jobs
    }

    /// ID, state, attempts, age, dedupe key, last error (on one line, cut at 80 characters).
    static func row(_ job: Job, now: Int64) -> [String] {
        var error = job.lastError.replacingOccurrences(of: "\n", with: " ")
        if error.count > 80 { error = String(error.prefix(79)) + "…" }
        return [job.jobId, job.state.description, "\(job.attempts)/\(job.maxAttempts)",
                HumanDuration.text(milliseconds: now - job.createdAtMs), orDash(job.dedupeKey), orDash(error)]
    }

    /// One row per failed attempt, oldest first: "attempt 2", when, the worker, the message.
    static func errorRows(_ job: Job, indent: String) -> [[String]] {
        job.errors.map { error in
            [indent + "attempt \(error.attempt)", ItemCommand.timestamp(error.atMs), orDash(error.workerId), error.message]
        }
    }

    /// The payload as its queue's message ("ThumbnailJob: image KEY, sizes 64, 256"), else its size.
    static func payload(of job: Job) -> String {
        guard !job.payload.isEmpty else { return "-" }
        if job.queue == JobQueueSpec.thumbnails.name, let thumbnails = try? ThumbnailJob(serializedBytes: job.payload) {
            return "ThumbnailJob: image \(thumbnails.imageKey), sizes \(thumbnails.sizes.map(String.init).joined(separator: ", "))"
        }
        if job.queue == JobQueueSpec.cascade.name, let cascade = try? DeleteImagesForOwnerRequest(serializedBytes: job.payload) {
            return "DeleteImagesForOwner: owner \(cascade.ownerKey), \(cascade.attachedKeys.count) attached photo(s)"
        }
        return "\(job.payload.count) bytes"
    }

    /// The result rows: a ThumbnailResult's thumbnails one a row (size, dimensions, key), else
    /// the result's size.
    static func result(of job: Job) -> [[String]] {
        guard !job.result.isEmpty else { return [["result", "-"]] }
        guard job.queue == JobQueueSpec.thumbnails.name, let result = try? ThumbnailResult(serializedBytes: job.result), !result.thumbnails.isEmpty
        else { return [["result", "\(job.result.count) bytes"]] }
        return result.thumbnails.enumerated().map { index, thumbnail in
            [index == 0 ? "result" : "",
             "size \(thumbnail.size): \(thumbnail.width)×\(thumbnail.height) \(thumbnail.key.isEmpty ? "(no key)" : thumbnail.key)"]
        }
    }

    static func orDash(_ text: String) -> String { text.isEmpty ? "-" : text }
}
