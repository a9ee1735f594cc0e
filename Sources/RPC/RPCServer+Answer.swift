import Proto

extension RPCServer {
    /// What a caller is told: a status, a message, a retry hint and, on OK, the response body.
    /// Every reply the server sends is one, and a handler's error becomes one in one place,
    /// `init(error:context:)`, whatever thread the handler ran on.
    struct Answer: Sendable {
        let code: StatusCode
        let message: String
        let retryAfter: UInt32
        /// Which of the code's causes (`ResponseHeader.reason`).
        let reason: String
        /// Sent only with OK.
        let body: MessageBody

        init(code: StatusCode, message: String, retryAfter: UInt32 = 0, reason: String = "", body: MessageBody = .empty) {
            self.code = code
            self.message = message
            self.retryAfter = retryAfter
            self.reason = reason
            self.body = body
        }

        /// A handler's response.
        static func ok(_ body: MessageBody) -> Answer {
            Answer(code: .ok, message: "", body: body)
        }

        /// The answer to a call its handler ended with `error`: the status an `RPCStatusError`
        /// carries; DEADLINE_EXCEEDED for a cancelled handler (the server cancels one only when
        /// its deadline passed or the server stops); INTERNAL, logged, for anything else (a bug).
        init(error: any Error, context: RPCContext) {
            if let error = error as? any RPCStatusError {
                self.init(
                    code: error.rpcStatus, message: error.rpcMessage, retryAfter: error.rpcRetryAfterMilliseconds,
                    reason: error.rpcReason)
            } else if error is CancellationError {
                self.init(code: .deadlineExceeded, message: "deadline passed while serving \(context.method)")
            } else {
                context.logger.error("handler failed", ["error": "\(error)"])
                self.init(code: .internal, message: "internal error in \(context.method): \(error)")
            }
        }

        /// The answer to a deferred handler's reply.
        init(_ result: Result<MessageBody, any Error>, context: RPCContext) {
            switch result {
            case .success(let body): self = .ok(body)
            case .failure(let error): self.init(error: error, context: context)
            }
        }

        /// Runs a handler that does not wait, and answers with what it returns or throws.
        static func of(_ context: RPCContext, _ handler: () throws -> MessageBody) -> Answer {
            do {
                return .ok(try handler())
            } catch {
                return Answer(error: error, context: context)
            }
        }

        /// The answer kept for a finished idempotent call, sent again to its retry.
        init(replaying outcome: IdempotencyCache.Outcome) {
            self.init(code: StatusCode(rawValue: outcome.code), message: outcome.message, body: outcome.body)
        }
    }
}
