import Foundation
import JPEG
import RPC
import Runtime

/// Runs the configured camera command (`/bin/sh -c COMMAND`, in a process group of its own)
/// and takes what it prints on stdout as the photo. A command that runs past its time limit is
/// killed with its whole group; one that fails says how, with the end of what it wrote to
/// stderr; output that is no JPEG, or more than `maxBytes`, is refused.
struct CameraCommand: Sendable {
    let command: String
    let timeoutMilliseconds: Int
    let maxBytes: Int

    /// The photo, or the error that says what the command did instead.
    func run() async throws(RPCError) -> [UInt8] {
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<Result<[UInt8], RPCError>, Never>) in
            // Blocking (poll and waitpid): a thread of its own, not the task pool's.
            Thread.detachNewThread { continuation.resume(returning: runBlocking()) }
        }
        return try outcome.get()
    }

    private func runBlocking() -> Result<[UInt8], RPCError> {
        var output: [Int32] = [0, 0], errors: [Int32] = [0, 0]
        guard pipe(&output) == 0, pipe(&errors) == 0 else {
            return .failure(.internal("cannot make pipes for the camera command: \(String(cString: strerror(errno)))"))
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, output[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errors[1], 2)
        for fd in output + errors { posix_spawn_file_actions_addclose(&actions, fd) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
        posix_spawnattr_setpgroup(&attributes, 0)
        var pid: pid_t = 0
        let arguments = ["/bin/sh", "-c", command]
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        let spawned = posix_spawn(&pid, "/bin/sh", &actions, &attributes, &argv, environ)
        close(output[1])
        close(errors[1])
        defer {
            close(output[0])
            close(errors[0])
        }
        guard spawned == 0 else {
            return .failure(.failedPrecondition("the camera command could not start: \(String(cString: strerror(spawned)))"))
        }
        var stdout: [UInt8] = [], stderr: [UInt8] = []
        let deadline = monotonicMilliseconds() + Int64(timeoutMilliseconds)
        var open = [output[0], errors[0]]
        var timedOut = false, tooLarge = false
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while !open.isEmpty {
            let left = deadline - monotonicMilliseconds()
            if left <= 0 { timedOut = true; break }
            var fds = open.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            let ready = poll(&fds, nfds_t(fds.count), Int32(min(left, 1000)))
            if ready < 0 && errno == EINTR { continue }
            if ready <= 0 { continue }
            for entry in fds where entry.revents != 0 {
                let count = read(entry.fd, &buffer, buffer.count)
                if count <= 0 { open.removeAll { $0 == entry.fd }; continue }
                if entry.fd == output[0] {
                    stdout += buffer[0..<count]
                    if stdout.count > maxBytes { tooLarge = true }
                } else if stderr.count < 4096 {
                    stderr += buffer[0..<min(count, 4096 - stderr.count)]
                }
            }
            if tooLarge { break }
        }
        if timedOut || tooLarge { kill(-pid, SIGKILL) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        // Whatever the shell left running in its group goes with it.
        kill(-pid, SIGKILL)
        let said = String(decoding: stderr, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        let saying = said.isEmpty ? "" : "; it said: \(said.suffix(300))"
        if timedOut {
            return .failure(.deadlineExceeded("the camera command did not finish within \(timeoutMilliseconds) ms and was killed (\(command))"))
        }
        if tooLarge {
            return .failure(.invalidArgument("the camera command printed more than \(maxBytes) bytes; it must print one JPEG"))
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
}
