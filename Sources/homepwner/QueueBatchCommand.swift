import CLISupport
import Foundation
import Proto
import RPC
import Runtime

/// `homepwner queue batch [QUEUE] BATCH_ID [--watch]`: how far a batch of jobs has come
/// (GetBatch), or its progress watched until it is done.
enum QueueBatchCommand {
    static let parser = QueueCommand.parser(
        "batch",
        "Shows a batch's progress (GetBatch): total, done, dead, pending, rate, time left. With --watch, its progress "
            + "on stderr (a bar on a terminal, else a line a second) until no job is pending; then exit 0 when none "
            + "is dead, \(ExitCode.deadJobs) when some are ('homepwner queue dead' lists them).",
        [
            OptionSpec(name: "watch", help: "follow the batch until it is done; exit \(ExitCode.deadJobs) if any job of it is dead", isFlag: true),
            QueueStall.option,
        ])

    static func run(_ arguments: [String]) async -> Int32 {
        guard let call = QueueCommand.invocation(parser, arguments, identifiedBy: "BATCH_ID") else { return HomepwnerCLI.exitCodeOverride }
        var request = GetBatchRequest()
        request.queue = call.queue
        request.batchId = call.arguments[0]
        let watching = call.options.bool("watch")
        guard let stall = QueueStall(queue: call.queue, options: call.options, command: "queue batch") else { return ExitCode.usage }
        return await call.withClientExitCode { client, timeout in
            let batch = watching
                ? try await watch(request, client: client, timeout: timeout, stall: stall)
                : try await client.call(JobQueueRPC.getBatch, request, options: .init(timeoutMilliseconds: timeout))
            if call.json {
                print(try QueueCommand.json(batch))
            } else {
                printColumns(rows(batch))
            }
            return watching ? BatchProgress.exitCode(batch) ?? ExitCode.ok : ExitCode.ok
        }
    }

    /// Polls GetBatch until the batch has no pending jobs, drawing its progress on stderr (a
    /// bar redrawn in place when stderr is a terminal, else a line each second); returns the
    /// last reply. `homepwner thumbs batch` watches the batch it enqueued with it too. When no
    /// job of the batch finishes for a while, `stall` says once why that may be.
    static func watch(_ request: GetBatchRequest, client: RPCClient, timeout: UInt32, stall: QueueStall) async throws -> JobBatch {
        let terminal = isatty(STDERR_FILENO) == 1
        var stall = stall
        while true {
            let batch = try await client.call(JobQueueRPC.getBatch, request, options: .init(timeoutMilliseconds: timeout))
            let finished = BatchProgress.exitCode(batch) != nil
            // "\u{1B}[K" clears what a longer line drawn before left to the right.
            let text = terminal ? "\r" + BatchProgress.bar(batch) + "\u{1B}[K" + (finished ? "\n" : "") : BatchProgress.line(batch) + "\n"
            FileHandle.standardError.write(Data(text.utf8))
            if finished { return batch }
            if let hint = await stall.observe(batch.done + batch.dead, client: client, timeout: timeout) {
                QueueStall.print(hint, afterBar: terminal)
            }
            try await Task.sleep(for: terminal ? .milliseconds(250) : .seconds(1))
        }
    }

    /// The batch as a short table's rows.
    static func rows(_ batch: JobBatch) -> [[String]] {
        var rows = [
            ["batch", "\(batch.batchId) (\(batch.queue))"],
            ["total", String(batch.total)],
            ["done", String(batch.done)],
            ["dead", String(batch.dead)],
            ["pending", String(batch.pending)],
            ["rate", BatchProgress.rate(batch)],
            ["time left", BatchProgress.timeLeft(batch)],
            ["created", ItemCommand.timestamp(batch.createdAtMs)],
        ]
        if batch.finishedAtMs > 0 { rows.append(["finished", ItemCommand.timestamp(batch.finishedAtMs)]) }
        return rows
    }
}
