import Foundation
import Harness
import Testing
import TestSupport

/// `homepwner item …` through the real executable against the harness.
@Suite struct ItemCLITests {
    static func homepwner(_ arguments: [String], harness: Harness) async throws -> CLITests.Run {
        try await CLITests.homepwner(arguments, harness: harness)
    }

    /// The keys in `item ls --json` output, in order.
    static func keys(_ json: String) throws -> [String] {
        let object = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
        return (object?["items"] as? [[String: Any]] ?? []).compactMap { $0["key"] as? String }
    }

    @Test func addShowEditMoveAndRemoveAnItem() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start()
        let added = try await Self.homepwner(["item", "add", "Rusty Spork", "--serial", "4X7BQ", "--value", "42", "--json"], harness: harness)
        #expect(added.status == 0, "\(added.stderr)")
        let item = try JSONSerialization.jsonObject(with: Data(added.stdout.utf8)) as? [String: Any]
        let key = try #require(item?["key"] as? String)

        let show = try await Self.homepwner(["item", "show", key], harness: harness)
        #expect(show.status == 0)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "MMM d, yyyy"
        let created = Double(item?["created_at_ms"] as? String ?? "0")! / 1000
        // The seed's description, with the date the item was recorded.
        #expect(
            show.stdout.hasPrefix("Rusty Spork (4X7BQ): Worth $42, recorded on \(formatter.string(from: Date(timeIntervalSince1970: created)))\n"),
            "\(show.stdout)")

        let random = try await Self.homepwner(["item", "add", "--random", "--count", "3"], harness: harness)
        #expect(random.status == 0 && random.stdout.split(separator: "\n").count == 4, "\(random.stdout)")

        let before = try Self.keys(try await Self.homepwner(["item", "ls", "--json"], harness: harness).stdout)
        #expect(before.count == 4 && before.first == key)
        let moved = try await Self.homepwner(["item", "mv", "0", "3"], harness: harness)
        #expect(moved.status == 0)
        let after = try Self.keys(try await Self.homepwner(["item", "ls", "--json"], harness: harness).stdout)
        #expect(after == Array(before.dropFirst()) + [key])

        let edit = try await Self.homepwner(["item", "edit", key, "--value", "50", "--name", "Shiny Spork"], harness: harness)
        #expect(edit.status == 0 && edit.stdout.contains("Shiny Spork (4X7BQ): Worth $50"), "\(edit.stdout)\(edit.stderr)")
        let table = try await Self.homepwner(["item", "ls", "--query", "x7bq"], harness: harness)
        #expect(table.stdout.contains("Shiny Spork") && table.stdout.contains("of 1 item"), "\(table.stdout)")

        let removed = try await Self.homepwner(["item", "rm", key], harness: harness)
        #expect(removed.status == 0)
        let stats = try await Self.homepwner(["item", "stats", "--json"], harness: harness)
        #expect(stats.status == 0 && stats.stdout.hasPrefix("{\"item_count\": 3, \"pending_cascades\": "), "\(stats.stdout)")
        let gone = try await Self.homepwner(["item", "show", key, "--json"], harness: harness)
        #expect(gone.status == 4 && gone.stdout.contains("NOT_FOUND"))
    }

    @Test func exitCodesTellInvalidNotFoundConflictAndUnavailableApart() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start()
        let invalid = try await Self.homepwner(["item", "add", "Spork", "--value", "-5"], harness: harness)
        #expect(invalid.status == 3 && invalid.stderr.contains("value_in_dollars must be ≥ 0 (got -5)"), "\(invalid.stderr)")
        let malformed = try await Self.homepwner(["item", "show", "nope"], harness: harness)
        #expect(malformed.status == 3 && malformed.stderr.contains("\"nope\""))
        let missing = try await Self.homepwner(["item", "rm", UUID().uuidString], harness: harness)
        #expect(missing.status == 4)
        let range = try await Self.homepwner(["item", "mv", "5", "0"], harness: harness)
        #expect(range.status == 3 && range.stderr.contains("from_index 5"))
        let usage = try await Self.homepwner(["item", "mv", "one", "two"], harness: harness)
        #expect(usage.status == 2)
        let typo = try await Self.homepwner(["item", "sho"], harness: harness)
        #expect(typo.status == 2 && typo.stderr.contains("did you mean 'show'"))

        let added = try await Self.homepwner(["item", "add", "Fluffy Bear", "--json"], harness: harness)
        let key = try #require((try JSONSerialization.jsonObject(with: Data(added.stdout.utf8)) as? [String: Any])?["key"] as? String)
        let stale = try await Self.homepwner(["item", "edit", key, "--value", "3", "--expect-version", "9"], harness: harness)
        #expect(stale.status == 6 && stale.stderr.contains("ABORTED"))

        await offThePool { harness.stop(.itemService) }
        let down = try await Self.homepwner(["item", "ls", "--timeout", "2000"], harness: harness)
        #expect(down.status == 5)
    }
}
