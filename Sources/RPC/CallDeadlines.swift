import Proto

/// Deadlines, a layer around dispatch: by when a call must be answered (set at parse from the
/// header's timeout, else the server's default), when the I/O loop scans for calls past it, and
/// the DEADLINE_EXCEEDED answers a caller gets at each point a deadline can pass. Times are on
/// the monotonic clock in milliseconds; nothing here sends or cancels.
struct CallDeadlines: Sendable, Equatable {
    /// A request whose header sets no timeout (0) gets this one.
    var defaultTimeoutMilliseconds: UInt32

    /// The loop looks for calls past their deadline at most this often.
    static let scanIntervalMilliseconds: Int64 = 5

    /// The deadline of a call read at `now` whose header asks for `timeoutMilliseconds` (0: the default).
    func deadline(arrivedAt now: Int64, timeoutMilliseconds: UInt32) -> Int64 {
        now + Int64(timeoutMilliseconds == 0 ? defaultTimeoutMilliseconds : timeoutMilliseconds)
    }

    /// Whether a deadline has passed at `now` (a call is still on time at its deadline itself).
    static func passed(_ deadline: Int64, now: Int64) -> Bool {
        deadline < now
    }

    /// Whether the loop scans again, its last scan at `lastScan`.
    static func scanDue(now: Int64, lastScan: Int64) -> Bool {
        now - lastScan >= scanIntervalMilliseconds
    }

    /// A call queued past its deadline: its handler does not start (a change nobody waits for).
    static func beforeStart(_ method: String) -> RPCServer.Answer {
        RPCServer.Answer(code: .deadlineExceeded, message: "deadline of \(method) passed before it started")
    }

    /// A running call past its deadline, answered by the scan (its handler is cancelled).
    static func beforeFinish(_ method: String) -> RPCServer.Answer {
        RPCServer.Answer(code: .deadlineExceeded, message: "deadline of \(method) passed before it finished")
    }

    /// A call whose handler answered after its deadline, before the scan told its caller.
    static func whileServing(_ method: String) -> RPCServer.Answer {
        RPCServer.Answer(code: .deadlineExceeded, message: "deadline passed while serving \(method)")
    }

    /// A caller whose own deadline passed while it waited on the running call with its idempotency key.
    static func whileWaiting(_ method: String) -> RPCServer.Answer {
        RPCServer.Answer(
            code: .deadlineExceeded,
            message: "deadline of \(method) passed while waiting for the first call with this idempotency key, which is still running")
    }
}
