/// Why bytes were refused as media: empty, of no known kind, a JPEG that is damaged, too
/// large or unsupported, or a PDF without a known version or its end-of-file marker. Always the
/// sender's data, so a service answers it INVALID_ARGUMENT.
public struct MediaError: Error, Equatable, CustomStringConvertible {
    /// What is wrong, for the sender: "data: JPEG is truncated (…)".
    public var message: String

    /// An error with `message`.
    public init(_ message: String) { self.message = message }

    /// The message.
    public var description: String { message }
}
