/// The cover fields given on the command line; nil leaves the policy's.
public struct ClaimCoverOverrides: Sendable, Hashable {
    /// `--policyholder`.
    public var policyholder: String?
    /// `--insurer`.
    public var insurer: String?
    /// `--policy-number`.
    public var policyNumber: String?
    /// `--address`.
    public var address: String?

    /// Overrides for those fields given.
    public init(policyholder: String? = nil, insurer: String? = nil, policyNumber: String? = nil, address: String? = nil) {
        self.policyholder = policyholder
        self.insurer = insurer
        self.policyNumber = policyNumber
        self.address = address
    }
}
