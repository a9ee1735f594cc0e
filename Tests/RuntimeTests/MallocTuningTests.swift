import Foundation
import Testing
import Runtime
import TestSupport

@Suite struct MallocTuningTests {
    @Test(.enabled(if: !Sanitizer.any, "a sanitizer's allocator replaces glibc's malloc, whose mallopt settings this checks"))
    func glibcAcceptsTheSettings() {
        #if canImport(Glibc)
        #expect(MallocTuning.forLargeMessages())
        // Large blocks still work and memory can be handed back afterwards.
        var blocks: [[UInt8]] = (0..<4).map { [UInt8](repeating: UInt8($0), count: 20_000_000) }
        #expect(blocks.allSatisfy { $0.count == 20_000_000 } && blocks[3][19_999_999] == 3)
        blocks.removeAll()
        MallocTuning.releaseFreedMemory()
        #endif
    }

    /// Freed blocks below a live one are never handed back by glibc on its own under these
    /// settings (the soak saw RSS creep up by one 16 MiB body at a time); the trimmer every
    /// service starts hands them back.
    @Test(.enabled(if: !Sanitizer.any, "a sanitizer's allocator replaces glibc's malloc, whose freed heap this checks is handed back"))
    func theTrimmerHandsBackFreedHeapBelowALiveBlock() async throws {
        #if canImport(Glibc)
        #expect(MallocTuning.forLargeMessages())
        var blocks: [UnsafeMutableRawPointer] = (0..<48).map { _ in
            let block = malloc(2 << 20)!
            memset(block, 1, 2 << 20)
            return block
        }
        let pin = malloc(512 << 10)!  // above the blocks: their space is not the heap's free top
        memset(pin, 1, 512 << 10)
        defer { free(pin) }
        let touched = Self.residentBytes()
        for block in blocks { free(block) }
        blocks.removeAll()
        // glibc keeps them (96 MiB freed, under the 128 MiB trim threshold and not at the top).
        let kept = Self.residentBytes()
        #expect(kept > touched - (48 << 20), "freed without a trim: \(touched >> 20) → \(kept >> 20) MiB")
        let timer = MallocTuning.startTrimming(every: 0.1)
        defer { timer.cancel() }
        #expect(try await eventually(within: 10) { Self.residentBytes() < kept - (48 << 20) },
                "after the trimmer: \(Self.residentBytes() >> 20) MiB, \(kept >> 20) before")
        #endif
    }

    /// This process's resident bytes (/proc/self/statm).
    static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let pages = text.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
