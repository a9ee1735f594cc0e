#if canImport(Glibc)
import Glibc
#endif

/// The sanitizer this test process runs under (`ops/test --sanitize address|thread`), found at
/// run time from its runtime's symbols, for the few tests that cannot work under one (a
/// sanitizer's allocator replaces glibc's malloc, for one). Such a test skips only there, saying
/// why, and ops/test allows that skip only in that run.
public enum Sanitizer {
    /// AddressSanitizer (with LeakSanitizer).
    public static let address = linked("__asan_init")
    /// ThreadSanitizer.
    public static let thread = linked("__tsan_init")
    /// Either.
    public static var any: Bool { address || thread }

    private static func linked(_ symbol: String) -> Bool {
        #if canImport(Glibc)
        dlsym(UnsafeMutableRawPointer(bitPattern: 0), symbol) != nil
        #else
        false
        #endif
    }
}
