import Proto

/// Who and what the packet is for, as its cover shows it: the policy's fields, each replaced
/// by the command's flag when one was given.
public struct ClaimCover: Sendable, Hashable {
    /// Who holds the policy.
    public var policyholder: String
    /// Who insures the contents.
    public var insurer: String
    /// The policy's number.
    public var policyNumber: String
    /// The insured home's address (line breaks kept).
    public var address: String

    /// A cover with the given fields (empty: not stated).
    public init(policyholder: String = "", insurer: String = "", policyNumber: String = "", address: String = "") {
        self.policyholder = policyholder
        self.insurer = insurer
        self.policyNumber = policyNumber
        self.address = address
    }

    /// The policy's fields, with each non-nil override in their place.
    public init(policy: Policy, overrides: ClaimCoverOverrides) {
        self.init(
            policyholder: overrides.policyholder ?? policy.policyholder, insurer: overrides.insurer ?? policy.insurer,
            policyNumber: overrides.policyNumber ?? policy.policyNumber, address: overrides.address ?? policy.address)
    }
}
