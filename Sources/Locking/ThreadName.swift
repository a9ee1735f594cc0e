#if canImport(Glibc)
import Glibc
#endif

/// Names the calling thread for the kernel (`top -H`, perf, /proc), its first 15 bytes: Foundation's
/// `Thread.name` is not passed on, and a new thread otherwise keeps its creator's name.
public func nameThisThread(_ name: String) {
    #if canImport(Glibc)
    let fd = open("/proc/thread-self/comm", O_WRONLY)
    guard fd >= 0 else { return }
    defer { close(fd) }
    let bytes = Array(name.utf8.prefix(15))
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    #endif
}
