internal import CSodium

/// The few libsodium calls `Signing` makes besides signing itself: initialization, base64 and
/// constant-time comparison. Only this module imports `CSodium`.
enum Sodium {
    /// `sodium_init`, run once by the first caller (a global's initializer runs exactly once,
    /// whatever the threads): 0 the first time, 1 when libsodium was already initialized (by
    /// libzmq, which links it too), -1 on failure.
    private static let initialized: Int32 = sodium_init()

    /// Initializes libsodium if it is not yet; every entry point of `Signing` calls it first.
    ///
    /// libsodium fails only when the system has no random source (it aborts by itself in most
    /// such cases), so a failure stops the process with what to check rather than being thrown.
    static func ready() {
        guard initialized >= 0 else {
            fatalError("libsodium failed to initialize (sodium_init returned -1): is /dev/urandom (or getrandom(2)) available to this process?")
        }
    }

    /// Calls `body` with a pointer to `bytes` and their count; an empty array still gets a valid
    /// pointer (libsodium's arguments are declared non-null even for zero bytes).
    static func withBytes<R>(_ bytes: [UInt8], _ body: (UnsafePointer<UInt8>, Int) -> R) -> R {
        if bytes.isEmpty {
            let one: [UInt8] = [0]
            return one.withUnsafeBufferPointer { body($0.baseAddress!, 0) }
        }
        return bytes.withUnsafeBufferPointer { body($0.baseAddress!, $0.count) }
    }

    /// `bytes` in standard base64 with `=` padding (`sodium_bin2base64`, constant time).
    static func base64(_ bytes: [UInt8]) -> String {
        ready()
        let variant = Int32(sodium_base64_VARIANT_ORIGINAL)
        let length = sodium_base64_encoded_len(bytes.count, variant)
        var text = [CChar](repeating: 0, count: length)
        withBytes(bytes) { pointer, count in
            _ = text.withUnsafeMutableBufferPointer { sodium_bin2base64($0.baseAddress!, length, pointer, count, variant) }
        }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The bytes of standard base64 text with `=` padding, nothing else (no spaces, no URL-safe
    /// alphabet); nil when it is not that. Constant time in the text's content
    /// (`sodium_base642bin`), so decoding a secret key does not leak it through timing.
    static func unbase64(_ text: Substring) -> [UInt8]? {
        ready()
        let encoded = Array(text.utf8)
        guard !encoded.isEmpty else { return [] }
        var bytes = [UInt8](repeating: 0, count: encoded.count)
        var length = 0
        let status = encoded.withUnsafeBufferPointer { input in
            input.withMemoryRebound(to: CChar.self) { characters in
                bytes.withUnsafeMutableBufferPointer { output in
                    sodium_base642bin(
                        output.baseAddress!, output.count, characters.baseAddress!, characters.count, nil, &length, nil,
                        Int32(sodium_base64_VARIANT_ORIGINAL))
                }
            }
        }
        guard status == 0 else { return nil }
        return Array(bytes.prefix(length))
    }

    /// Whether `a` and `b` are equal, in time that depends only on their length (`sodium_memcmp`).
    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        guard !a.isEmpty else { return true }
        return a.withUnsafeBytes { x in b.withUnsafeBytes { y in sodium_memcmp(x.baseAddress!, y.baseAddress!, a.count) == 0 } }
    }
}
