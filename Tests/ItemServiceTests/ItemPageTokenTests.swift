import Foundation
import Testing

@testable import ItemService

/// Page tokens round-trip and refuse what ListItems did not issue.
@Suite struct ItemPageTokenTests {
    @Test func aTokenRoundTripsWithTextAndIntegerCursors() throws {
        for last in [ItemPageToken.Value.text("Rusty Spork ✓.%_"), .integer(-42)] {
            let token = ItemPageToken(sort: 1, descending: true, query: "sp.ork", last: last, lastID: 77)
            let text = token.encoded()
            #expect(text.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
            #expect(try ItemPageToken(decoding: text) == token)
        }
    }

    @Test func aDamagedOrInventedTokenIsRefusedNamingIt() throws {
        let text = ItemPageToken(sort: 0, descending: false, query: "", last: .integer(1 << 20), lastID: 1).encoded()
        var damaged = Array(text)
        damaged[4] = damaged[4] == "A" ? "B" : "A"
        for bad in [String(damaged), "hello", "", String(repeating: "A", count: 3000)] {
            #expect(throws: ItemStoreError.self) { try ItemPageToken(decoding: bad) }
        }
        let error = storeError { try ItemPageToken(decoding: "hello") }
        #expect(error?.description.contains("page_token \"hello\"") == true)
    }
}
