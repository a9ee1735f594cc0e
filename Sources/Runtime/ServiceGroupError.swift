/// Failures reported by ``ServiceGroup/run()`` that are not a service's own error.
public enum ServiceGroupError: Error, Equatable, CustomStringConvertible {
    /// The named service returned from `run()` before shutdown was requested.
    case serviceReturnedEarly(String)

    /// A message for the user.
    public var description: String {
        switch self {
        case .serviceReturnedEarly(let name):
            "service '\(name)' returned before shutdown was requested"
        }
    }
}
