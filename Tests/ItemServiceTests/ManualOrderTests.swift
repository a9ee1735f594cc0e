import Foundation
import ItemService
import Proto
import Testing
import TestSupport

/// The manual order (MoveItem) against an array model, on a real database.
@Suite struct ManualOrderTests {
    @Test func randomMovesMatchAnArrayModelAThousandTimes() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let path = folder.path + "/items.db"
        var store = try ItemStore(path: path)
        var model: [String] = []
        for index in 0..<40 { model.append(try store.create(createRequest("Item \(index)"), now: 1).item.key) }
        var random = SplitMix64(seed: 20261129)
        for round in 1...1000 {
            let from = Int.random(in: 0..<model.count, using: &random)
            // Half the moves go next to the same spot, so gaps run out and windows get spread.
            let to = round % 2 == 0 ? min(1, model.count - 1) : Int.random(in: 0..<model.count, using: &random)
            try store.move(from: Int32(from), to: Int32(to))
            model.insert(model.remove(at: from), at: to)
            if round % 100 == 0 {
                #expect(try allItems(store, pageSize: 7).map(\.key) == model, "after \(round) moves")
                // The order is what is on disk, not only what is in memory.
                try store.close()
                store = try ItemStore(path: path)
            }
        }
        #expect(try allItems(store).map(\.key) == model)
    }

    @Test func adversarialMovesIntoOneSpotKeepTheOrder() {
        var order = ManualOrder(entries: (0..<100).map { ManualOrder.Entry(id: Int64($0), position: Int64($0 + 1) * ManualOrder.gap) })
        var model = Array(0..<100).map(Int64.init)
        var renumbered = 0
        for _ in 0..<500 {
            let changes = order.move(from: 99, to: 1)
            renumbered += changes.count
            model.insert(model.remove(at: 99), at: 1)
            #expect(order.entries.map(\.id) == model)
            #expect(zip(order.entries, order.entries.dropFirst()).allSatisfy { $0.position < $1.position })
        }
        // Spreading is local: far fewer rows than renumbering all 100 items on every exhaustion.
        #expect(renumbered < 500 * 10)
    }

    @Test func movesOutOfRangeNameTheIndexAndTheCount() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let store = try ItemStore(path: folder.path + "/items.db")
        guard case let .outOfRange(empty)? = storeError({ try store.move(from: 0, to: 0) }) else { Issue.record("accepted"); return }
        #expect(empty == "there are no items to move (from_index 0, to_index 0)")
        for index in 0..<3 { _ = try store.create(createRequest("Item \(index)"), now: 1) }
        guard case let .outOfRange(message)? = storeError({ try store.move(from: 3, to: 0) }) else { Issue.record("accepted"); return }
        #expect(message.contains("from_index 3") && message.contains("3 items"))
        guard case let .outOfRange(to)? = storeError({ try store.move(from: 0, to: 7) }) else { Issue.record("accepted"); return }
        #expect(to.contains("to_index 7"))
        guard case let .invalidArgument(negative)? = storeError({ try store.move(from: -1, to: 0) }) else { Issue.record("accepted"); return }
        #expect(negative.contains("from_index must be ≥ 0 (got -1)"))
        try store.move(from: 1, to: 1)
    }
}
