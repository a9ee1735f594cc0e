import Foundation
import Harness
import Testing
import TestSupport

/// `homepwner location|category|policy …` and the claim flags of `item add|edit|ls|show`, through
/// the real executable against the harness.
@Suite struct InventoryCLITests {
    static func homepwner(_ arguments: [String], harness: Harness) async throws -> CLITests.Run {
        try await CLITests.homepwner(arguments, harness: harness)
    }

    @Test func locationsCategoriesPolicyAndClaimFieldsFromTheCommandLine() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start()
        func run(_ arguments: String...) async throws -> CLITests.Run { try await Self.homepwner(arguments, harness: harness) }

        #expect(try await run("location", "add", "Home", "--kind", "home").status == 0)
        #expect(try await run("location", "add", "Ground floor", "--in", "Home", "--kind", "floor").status == 0)
        let kitchen = try await run("location", "add", "Kitchen", "--in", "home / ground floor", "--json")
        #expect(kitchen.status == 0, "\(kitchen.stderr)")
        #expect(kitchen.stdout.contains("\"path\": \"Home / Ground floor / Kitchen\""), "\(kitchen.stdout)")
        #expect(try await run("category", "add", "Electronics", "--life", "5", "--floor", "20").status == 0)
        let policy = try await run("policy", "set", "--currency", "eur", "--holder", "Ana Müller", "--limit", "50000")
        #expect(policy.status == 0 && policy.stdout.contains("€50,000.00") && policy.stdout.contains("Ana Müller"), "\(policy.stdout)")

        let added = try await run(
            "item", "add", "Холодильник", "--serial", "BSH-778", "--location", "Kitchen", "--brand", "Bosch", "--model", "KGN39",
            "--purchased", "2022-03-01", "--price", "899", "--replacement", "1049.50 EUR", "--tag", "kitchen", "--tag", "appliance",
            "--category", "electronics", "--field", "Energy class=A++", "--json")
        #expect(added.status == 0, "\(added.stderr)")
        let item = try JSONSerialization.jsonObject(with: Data(added.stdout.utf8)) as? [String: Any]
        let key = try #require(item?["key"] as? String)
        #expect(item?["tags"] as? [String] == ["kitchen", "appliance"])
        #expect((item?["replacement_value"] as? [String: Any])?["minor_units"] as? String == "104950")

        let show = try await run("item", "show", key, "--as-of", "2025-03-01")
        #expect(show.status == 0, "\(show.stderr)")
        for text in ["Home / Ground floor / Kitchen", "Bosch", "Electronics", "Energy class  A++", "€1,049.50", "36 months old"] {
            #expect(show.stdout.contains(text), "\(text) not in \(show.stdout)")
        }
        let found = try await run("item", "ls", "--search", "холод bosch", "--json")
        #expect(ItemCLITests.keysOrEmpty(found.stdout) == [key], "\(found.stdout)")
        let inFloor = try await run("item", "ls", "--location", "Home/Ground floor", "--json")
        #expect(ItemCLITests.keysOrEmpty(inFloor.stdout) == [key])
        let noReceipt = try await run("item", "ls", "--missing", "receipt", "--json")
        #expect(ItemCLITests.keysOrEmpty(noReceipt.stdout) == [key])
        let edited = try await run("item", "edit", key, "--quantity", "2", "--tag", "")
        #expect(edited.status == 0, "\(edited.stderr)")
        let tree = try await run("location", "ls")
        #expect(tree.stdout.contains("    Kitchen") && tree.stdout.contains("0 item(s) in no location"), "\(tree.stdout)")

        // Refusals with their exit codes and messages.
        let full = try await run("location", "rm", "Kitchen")
        #expect(full.status == 3 && full.stderr.contains("still holds 1 item"), "\(full.stderr)")
        let cycle = try await run("location", "mv", "Home", "--to", "Kitchen")
        #expect(cycle.status == 3 && cycle.stderr.contains("which is inside it"), "\(cycle.stderr)")
        let unknown = try await run("item", "ls", "--location", "Attic")
        #expect(unknown.status == 4 && unknown.stderr.contains("no location named \"Attic\""), "\(unknown.stderr)")
        let price = try await run("item", "add", "Lamp", "--price", "1.999")
        #expect(price.status == 2 && price.stderr.contains("--price"), "\(price.stderr)")
        let date = try await run("item", "add", "Lamp", "--purchased", "2023-02-30")
        #expect(date.status == 3 && date.stderr.contains("purchase_date must be a date"), "\(date.stderr)")
        let kind = try await run("location", "add", "Attic", "--kind", "cellar")
        #expect(kind.status == 2, "\(kind.stderr)")
        // 'homepwner call' reaches the new methods by name, with proto JSON both ways.
        let valuation = try await run("call", "ItemService/GetValuation", "{\"asOf\": \"2025-03-01\"}")
        #expect(valuation.status == 0 && valuation.stdout.contains("\"currency\": \"EUR\""), "\(valuation.stdout)\(valuation.stderr)")
        let located = try await run("call", "ItemService/CreateLocation", "{\"name\": \"Attic\", \"kind\": \"LOCATION_KIND_ROOM\"}")
        #expect(located.status == 0 && located.stdout.contains("\"path\": \"Attic\""), "\(located.stdout)\(located.stderr)")
        let refused = try await run("call", "ItemService/DeleteLocation", "{\"key\": \"nope\"}")
        #expect(refused.status == 3 && refused.stderr.contains("INVALID_ARGUMENT"), "\(refused.stdout)\(refused.stderr)")
        #expect(try await run("location", "rm", "Attic").status == 0)
        #expect(try await run("item", "rm", key).status == 0)
        #expect(try await run("location", "rm", "Home/Ground floor/Kitchen").status == 0)
        #expect(try await run("category", "rm", "Electronics").status == 0)
    }
}

extension ItemCLITests {
    /// The keys in `item ls --json` output, or none when it is not that.
    static func keysOrEmpty(_ json: String) -> [String] { (try? keys(json)) ?? [] }
}
