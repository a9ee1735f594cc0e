import Foundation

/// One fuzz target: a function of one input that hands it to the product's own parsing code,
/// as a socket, a file or a command line would, and checks what comes back.
///
/// libFuzzer calls it through `homepwner-fuzz` (ops/fuzz); the suite replays every committed
/// input through the same function (Tests/FuzzTests).
public struct FuzzTarget: Sendable {
    /// The name ops/fuzz and the corpus folder use, e.g. "rpc-request".
    public let name: String
    /// The product code it reaches, one line for --help.
    public let summary: String
    /// The longest input libFuzzer makes for it (-max_len).
    public let maxLength: Int
    private let body: @Sendable (UnsafeRawBufferPointer, inout FuzzOutcome) -> Void

    init(
        name: String, summary: String, maxLength: Int = 4096,
        body: @escaping @Sendable (UnsafeRawBufferPointer, inout FuzzOutcome) -> Void
    ) {
        self.name = name
        self.summary = summary
        self.maxLength = maxLength
        self.body = body
    }

    /// Runs one input; a crash, a hang or an unbounded allocation in the product shows as
    /// such, a broken property as the outcome's violations.
    public func run(_ input: UnsafeRawBufferPointer) -> FuzzOutcome {
        var outcome = FuzzOutcome()
        body(input, &outcome)
        return outcome
    }

    /// `run` of an array.
    public func run(_ input: [UInt8]) -> FuzzOutcome {
        input.withUnsafeBytes { run($0) }
    }

    /// Every target, in the order ops/fuzz runs them.
    public static let all: [FuzzTarget] = [
        rpcRequest, protoMessage, callJSON, jpeg, heic, png, exifTIFF, iccProfile, zapRequest, allowedKeys, keyFile, scrapeHTTP,
    ]

    /// The target called `name`.
    public static func named(_ name: String) -> FuzzTarget? {
        all.first { $0.name == name }
    }
}

/// What the product made of one input: its answers, and the properties it broke.
public struct FuzzOutcome: Sendable {
    /// One line per parser asked: what it accepted, or its refusal.
    public private(set) var answers: [String] = []
    /// Properties the answers broke (a refusal that says nothing, a round trip that changed
    /// the value); libFuzzer reports each as a crash, the replay test as a failure.
    public private(set) var violations: [String] = []

    /// Records an answer.
    mutating func answer(_ text: String) {
        answers.append(text)
    }

    /// Records a refusal by `parser`.
    mutating func refused(_ parser: String, _ error: any Error) {
        refused(parser, message: "\(error)")
    }

    /// Records a refusal by `parser`; one whose message is empty breaks the rule that bad input
    /// is told what was wrong.
    mutating func refused(_ parser: String, message: String) {
        answers.append("\(parser): refused: \(message)")
        check(!message.trimmingCharacters(in: .whitespaces).isEmpty, "\(parser) refused the input without saying why")
    }

    /// Records a violation unless `condition` holds.
    mutating func check(_ condition: Bool, _ violation: @autoclosure () -> String) {
        if !condition { violations.append(violation()) }
    }
}
