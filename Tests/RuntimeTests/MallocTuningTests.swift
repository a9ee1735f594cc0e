import Foundation
import Testing
import Runtime
import TestSupport

/// Serialized: the trimmer tests start trimmers of this process, which the other tests here would
/// see.
@Suite(.serialized) struct MallocTuningTests {
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
    /// settings (the soak saw RSS creep up by one 16 MiB body at a time); a trimmer hands them
    /// back. Judged by the residency of the freed blocks' own pages (mincore), in a child process
    /// of its own (an exit test): in this one, the tests running beside it allocate from the same
    /// arena and fill the freed blocks again before the trimmer's check (2 of 4 full runs).
    @Test(.enabled(
        if: !Sanitizer.any,
        "a sanitizer's allocator replaces glibc's malloc, whose mallopt settings and kept freed heap this checks"))
    func theTrimmerHandsBackFreedHeapBelowALiveBlock() async throws {
        #if canImport(Glibc)
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            try await MallocTuningTests.freedBlocksGoBackOnlyWithTheTrimmer()
        }
        if let result, let said = String(bytes: result.standardErrorContent, encoding: .utf8), !said.isEmpty {
            // What the child measured, in the log when it failed.
            print("trimmer child: \(said)")
        }
        #endif
    }

    /// In the exit test's child: frees 96 MiB below a live block, checks glibc keeps its pages,
    /// then that a trimmer hands them back; exits non-zero naming the figure that failed.
    static func freedBlocksGoBackOnlyWithTheTrimmer() async throws {
        #if canImport(Glibc)
        func fail(_ message: String) -> Never {
            FileHandle.standardError.write(Data(message.utf8))
            exit(1)
        }
        guard MallocTuning.forLargeMessages() else { fail("mallopt refused the settings") }
        let blockBytes = 2 << 20
        var blocks: [UnsafeMutableRawPointer] = (0..<48).map { _ in
            let block = malloc(blockBytes)!
            memset(block, 1, blockBytes)
            return block
        }
        let pin = malloc(512 << 10)!  // above the blocks: their space is not the heap's free top
        memset(pin, 1, 512 << 10)
        defer { free(pin) }
        let addresses = blocks.map { Int(bitPattern: $0) }
        for block in blocks { free(block) }
        blocks.removeAll()
        // glibc keeps them (96 MiB freed, under the 128 MiB trim threshold and not at the top).
        let kept = residentFraction(of: addresses, bytes: blockBytes)
        guard kept > 0.9 else { fail("freed without a trim: \(Int(kept * 100)) % of their pages resident, expected > 90 %") }
        let trimmer = MallocTuning.startTrimming(every: 0.1)
        let handedBack = try await eventually(within: 10) { residentFraction(of: addresses, bytes: blockBytes) < 0.5 }
        withExtendedLifetime(trimmer) {}
        let left = residentFraction(of: addresses, bytes: blockBytes)
        guard handedBack else { fail("after the trimmer: \(Int(left * 100)) % of their pages resident, expected < 50 %") }
        FileHandle.standardError.write(Data("kept \(Int(kept * 100)) % before the trimmer, \(Int(left * 100)) % after".utf8))
        #endif
    }

    /// What every service and `homepwner up` start: a trimmer no caller holds. (The first
    /// version discarded the dispatch timer, which libdispatch then freed before it ever fired:
    /// no service trimmed, and the soak's RSS kept its peaks.)
    @Test func theProcessesTrimmerRunsThoughNoCallerKeepsIt() async throws {
        let before = HeapTrimmer.firings
        MallocTuning.trimForTheProcess(every: 0.05)
        defer { MallocTuning.trimForTheProcess() }  // back to the services' interval
        #expect(try await eventually(within: 10) { HeapTrimmer.firings >= before + 3 },
                "the process's trimmer fired \(HeapTrimmer.firings - before) times")
    }

    /// The share of the whole pages inside blocks of `bytes` at `addresses` that are resident.
    static func residentFraction(of addresses: [Int], bytes: Int) -> Double {
        #if canImport(Glibc)
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        var resident = 0, total = 0
        for address in addresses {
            let start = (address + page - 1) / page * page, end = (address + bytes) / page * page
            guard end > start else { continue }
            var vector = [UInt8](repeating: 0, count: (end - start) / page)
            guard mincore(UnsafeMutableRawPointer(bitPattern: start), end - start, &vector) == 0 else { continue }
            resident += vector.filter { $0 & 1 != 0 }.count
            total += vector.count
        }
        return total == 0 ? 0 : Double(resident) / Double(total)
        #else
        return 0
        #endif
    }
}
