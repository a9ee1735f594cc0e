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
}
