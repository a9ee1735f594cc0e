import Foundation
import FuzzTargets
import Testing

/// Every committed input of every fuzz target (Fuzz/corpus: the seeds, and the regression file
/// of each crash fuzzing found) through the target's own function, without libFuzzer: the
/// product answers each one, accepting or refusing it with a reason, and breaks none of the
/// properties the target checks. A crash here is a regression of a fixed finding.
@Suite struct CorpusReplayTests {
    /// `<package>/Fuzz/corpus`.
    static let corpus = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // FuzzTests
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()
        .appendingPathComponent("Fuzz/corpus")
        .standardizedFileURL

    /// The fewest inputs each target's folder holds today (its seeds), so a corpus that went
    /// missing, or a folder the replay no longer finds, fails instead of replaying nothing.
    static let floors: [String: Int] = [
        "rpc-request": 53, "proto-message": 104, "call-json": 50, "jpeg": 16, "heic": 5, "png": 11, "exif-tiff": 8, "icc-profile": 6,
        "zap-request": 8, "allowed-keys": 9, "key-file": 8, "scrape-http": 14,
    ]

    /// Every file under a target's folder, regressions included.
    static func inputs(of target: String) -> [URL] {
        let folder = corpus.appendingPathComponent(target)
        guard let walk = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: [.isRegularFileKey]) else { return [] }
        return walk.compactMap { $0 as? URL }
            .filter { (try? $0.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true }
            .sorted { $0.path < $1.path }
    }

    @Test(arguments: FuzzTarget.all.map(\.name))
    func everyCommittedInputIsAnsweredAndBreaksNoProperty(_ name: String) throws {
        let target = try #require(FuzzTarget.named(name))
        let files = Self.inputs(of: name)
        let floor = try #require(Self.floors[name], "no floor for target \(name)")
        #expect(files.count >= floor, "\(name): \(files.count) inputs in \(Self.corpus.path)/\(name), at least \(floor) expected")
        for file in files {
            let outcome = target.run([UInt8](try Data(contentsOf: file)))
            let path = file.path.replacingOccurrences(of: Self.corpus.path + "/", with: "")
            #expect(!outcome.answers.isEmpty, "\(path): the product gave no answer")
            #expect(outcome.violations.isEmpty, "\(path): \(outcome.violations.joined(separator: "; "))")
        }
    }

    @Test func theCorpusHoldsAFolderForEachTargetAndNoOther() throws {
        let folders = try FileManager.default.contentsOfDirectory(atPath: Self.corpus.path).filter { !$0.hasPrefix(".") && !$0.hasSuffix(".md") }
        #expect(Set(folders) == Set(FuzzTarget.all.map(\.name)))
        #expect(Set(Self.floors.keys) == Set(FuzzTarget.all.map(\.name)))
    }
}
