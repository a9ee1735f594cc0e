/// Why a claim report was not written, apart from what the services answered (those arrive as
/// `RPCError`s with their status).
public struct ClaimReportError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What kind of failure, for the command's exit code.
    public enum Kind: Sendable, Equatable {
        /// The scope holds no item: there is nothing to report.
        case emptySelection
        /// The output cannot be made where it was asked for (checked before anything is sent).
        case unwritableOutput
        /// Writing the output failed part way (a full disk, a file removed underneath).
        case writeFailed
    }

    /// What kind of failure.
    public let kind: Kind
    /// A sentence a person can act on, naming the path or the scope.
    public let message: String

    /// An error of `kind` saying `message`.
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// "no items in Home / Attic; nothing to report".
    public static func emptySelection(scope: String?) -> ClaimReportError {
        ClaimReportError(.emptySelection, scope.map { "no items in \($0); nothing to report" } ?? "no items at all; nothing to report")
    }

    /// The message alone: it names what failed.
    public var description: String { message }
}
