import CPidFD
import Dispatch
import Foundation
import JPEG
import RPC
import Runtime
import Locking

/// Runs the configured camera command (`/bin/sh -c COMMAND`, in a process group of its own)
/// and takes what it prints on stdout as the photo. A command that runs past its time limit is
/// killed with its whole group, whether it is still printing or has closed its output and
/// lingers; one that fails says how, with the end of what it wrote to stderr; output that is no
/// JPEG, or more than `maxBytes`, is refused. A task cancelled while it runs kills it too.
///
/// Its pipes are made close-on-exec: a command started while another one runs never holds that
/// one's output open (which kept it from seeing the end of its photo until both timed out).
struct CameraCommand: Sendable {
    let command: String
    let timeoutMilliseconds: Int
    let maxBytes: Int

    /// Held while a command's pipes are made and it is spawned: close-on-exec is set apart from
    /// pipe(2) (Swift's Glibc has no pipe2), so no other command may start in between.
    private static let spawning = Locked(())

    /// The photo, or the error that says what the command did instead. The command's pipes and
    /// exit are waited for on a thread of `threads` (poll and waitpid block), not the task pool's.
    func run(on threads: BlockingPool) async throws(RPCError) -> [UInt8] {
        let group = ProcessGroup()
        let outcome: Result<[UInt8], RPCError>
        do {
            outcome = try await withTaskCancellationHandler {
                try await threads.run { runBlocking(group) }
            } onCancel: {
                group.kill()
            }
        } catch is CancellationError {
            throw RPCError(.cancelled, "the camera command was not started: its capture was cancelled")
        } catch {
            throw .unavailable("the camera command was not started: \(error); the capture worker is stopping")
        }
        return try outcome.get()
    }

    private func runBlocking(_ group: ProcessGroup) -> Result<[UInt8], RPCError> {
        var output: [Int32] = [-1, -1], errors: [Int32] = [-1, -1]
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
        posix_spawnattr_setpgroup(&attributes, 0)
        var pid: pid_t = 0
        let arguments = ["/bin/sh", "-c", command]
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        let spawned = Self.spawning.withLock { _ -> Int32 in
            guard pipe(&output) == 0, pipe(&errors) == 0, (output + errors).allSatisfy({ fcntl($0, F_SETFD, FD_CLOEXEC) == 0 }) else {
                let failure = errno
                for fd in [output[1], errors[1]] where fd >= 0 { close(fd) }
                return failure
            }
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
            // dup2 leaves the copies without close-on-exec: the command gets these two, and only them.
            posix_spawn_file_actions_adddup2(&actions, output[1], 1)
            posix_spawn_file_actions_adddup2(&actions, errors[1], 2)
            let spawned = posix_spawn(&pid, "/bin/sh", &actions, &attributes, &argv, environ)
            close(output[1])
            close(errors[1])
            return spawned
        }
        defer {
            for fd in [output[0], errors[0]] where fd >= 0 { close(fd) }
        }
        guard spawned == 0 else {
            return .failure(.failedPrecondition("the camera command could not start: \(String(cString: strerror(spawned)))"))
        }
        let deadline = monotonicMilliseconds() + Int64(timeoutMilliseconds)
        var exit = ExitWaiter(pid: pid)
        group.started(pid)
        let (stdout, stderr, tooLarge) = read(output: output[0], errors: errors[0], until: deadline)
        // Its output closed, it may still run: its exit is waited for until the same deadline.
        let timedOut = tooLarge ? false : !exit.wait(untilMilliseconds: deadline)
        // Whatever the shell left running in its group goes with it (and all of it, past the limit).
        let cancelled = group.end()
        let status = exit.wait(untilMilliseconds: monotonicMilliseconds() + Self.reapMilliseconds) ? exit.status : nil
        if cancelled { return .failure(RPCError(.cancelled, "the camera command was stopped: its capture was cancelled")) }
        let said = String(decoding: stderr, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        let saying = said.isEmpty ? "" : "; it said: \(said.suffix(300))"
        if timedOut {
            return .failure(.deadlineExceeded("the camera command did not finish within \(timeoutMilliseconds) ms and was killed (\(command))"))
        }
        if tooLarge {
            return .failure(.invalidArgument("the camera command printed more than \(maxBytes) bytes; it must print one JPEG"))
        }
        guard let status else {
            return .failure(.internal("the camera command was killed but did not end within \(Self.reapMilliseconds) ms (\(command))"))
        }
        let exited = status & 0x7f == 0, code = (status >> 8) & 0xff
        guard exited, code == 0 else {
            let how = exited ? "exited with status \(code)" : "was killed by signal \(status & 0x7f)"
            return .failure(.failedPrecondition("the camera command \(how) (\(command))\(saying)"))
        }
        guard !stdout.isEmpty else {
            return .failure(.invalidArgument("the camera command printed nothing; it must print one JPEG on stdout (\(command))\(saying)"))
        }
        guard JPEG.sniff(stdout) else {
            let head = stdout.prefix(8).map { String(format: "%02x", $0) }.joined(separator: " ")
            return .failure(.invalidArgument("the camera command printed \(stdout.count) bytes that are not a JPEG (they begin \(head))"))
        }
        return .success(stdout)
    }

    /// How long a killed command has to end before it is left to its waiter.
    static let reapMilliseconds: Int64 = 5_000

    /// What the command prints on `output` (at most `maxBytes`: past that, `tooLarge`) and the
    /// first 4 KiB it writes on `errors`, until both end or `deadline` passes.
    private func read(output: Int32, errors: Int32, until deadline: Int64) -> (stdout: [UInt8], stderr: [UInt8], tooLarge: Bool) {
        var stdout: [UInt8] = [], stderr: [UInt8] = []
        var open = [output, errors]
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while !open.isEmpty {
            let left = deadline - monotonicMilliseconds()
            if left <= 0 { break }
            var fds = open.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            let ready = poll(&fds, nfds_t(fds.count), Int32(min(left, 1000)))
            if ready <= 0 { continue }
            for entry in fds where entry.revents != 0 {
                let count = Glibc.read(entry.fd, &buffer, buffer.count)
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { open.removeAll { $0 == entry.fd }; continue }
                if entry.fd == output {
                    stdout += buffer[0..<count]
                    if stdout.count > maxBytes { return (stdout, stderr, true) }
                } else if stderr.count < 4096 {
                    stderr += buffer[0..<min(count, 4096 - stderr.count)]
                }
            }
        }
        return (stdout, stderr, false)
    }
}

/// The command's process group: killed when its task is cancelled, and when its run ends
/// (whatever it left running goes with it).
private final class ProcessGroup: Sendable {
    private struct State {
        var pid: pid_t?
        var cancelled = false
        var ended = false
    }

    private let state = Locked(State())

    /// The group is `pid`'s; killed at once when the task was cancelled before it started.
    func started(_ pid: pid_t) {
        let cancelled = state.withLock { state -> Bool in
            state.pid = pid
            return state.cancelled
        }
        if cancelled { Glibc.kill(-pid, SIGKILL) }
    }

    /// Cancelled: kills the group if it runs.
    func kill() {
        let pid = state.withLock { state -> pid_t? in
            state.cancelled = true
            return state.ended ? nil : state.pid
        }
        if let pid { Glibc.kill(-pid, SIGKILL) }
    }

    /// Kills what is left of the group and returns whether the run was cancelled; a later
    /// cancellation kills nothing.
    func end() -> Bool {
        let (pid, cancelled) = state.withLock { state -> (pid_t?, Bool) in
            state.ended = true
            return (state.pid, state.cancelled)
        }
        if let pid { Glibc.kill(-pid, SIGKILL) }
        return cancelled
    }
}

/// Waits for a child's exit until a deadline: waitpid(2) has no time limit, so the wait sleeps
/// in poll(2) on the child's pidfd (readable once it has exited) and then reaps it without
/// blocking (WNOHANG). On a kernel without pidfds (before 5.3) it asks every few milliseconds
/// instead. On the command's own thread.
private struct ExitWaiter: ~Copyable {
    let pid: pid_t
    /// Its wait status, once `wait` said it exited.
    private(set) var status: Int32 = 0
    private var exited = false
    /// -1 when the kernel has no pidfds.
    private let pidfd: Int32

    init(pid: pid_t) {
        self.pid = pid
        pidfd = hp_pidfd_open(pid)
        if pidfd >= 0 { _ = fcntl(pidfd, F_SETFD, FD_CLOEXEC) }
    }

    deinit {
        if pidfd >= 0 { close(pidfd) }
    }

    /// Whether it exited before `deadline` (monotonic milliseconds); once true, true again.
    mutating func wait(untilMilliseconds deadline: Int64) -> Bool {
        while !exited {
            var waited: Int32 = 0
            let reaped = waitpid(pid, &waited, WNOHANG)
            if reaped == pid || (reaped < 0 && errno == ECHILD) {
                exited = true
                status = waited
                continue
            }
            if reaped < 0 && errno == EINTR { continue }
            let left = deadline - monotonicMilliseconds()
            if left <= 0 { return false }
            if pidfd >= 0 {
                var exit = pollfd(fd: pidfd, events: Int16(POLLIN), revents: 0)
                _ = poll(&exit, 1, Int32(clamping: left))
            } else {
                usleep(5_000)
            }
        }
        return true
    }
}
