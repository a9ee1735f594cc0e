import Foundation
import Proto
import Testing

@testable import ItemService

/// Concurrent writes share one commit; a failing job in a batch undoes only itself.
@Suite struct GroupCommitTests {
    @Test func aFailingJobInABatchLeavesTheOthersCommitted() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let path = folder.path + "/items.db"
        let store = try ItemStore(path: path)
        let deleted = UUID().uuidString.lowercased()
        _ = try store.create(createRequest("Gone", key: deleted), now: 1)
        _ = try store.delete(key: deleted, now: 2)

        try store.beginBatch()
        let first = try store.create(createRequest("First"), now: 3).item
        // Fails inside its savepoint: the key belonged to a deleted item.
        #expect(storeError { try store.create(createRequest("Again", key: deleted), now: 3) } != nil)
        let second = try store.create(createRequest("Second"), now: 3).item
        try store.move(from: 1, to: 0)
        try store.commitBatch()
        try store.close()

        let reopened = try ItemStore(path: path)
        #expect(try allItems(reopened).map(\.key) == [second.key, first.key])
    }

    @Test func concurrentCreatesThroughTheQueueAreAllStored() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let path = folder.path + "/items.db"
        let queue = try ItemStoreQueue(path: path)
        let keys = try await withThrowingTaskGroup(of: String.self) { group in
            for index in 0..<200 {
                group.addTask {
                    try await queue.perform { try $0.create(createRequest("Item \(index)"), now: 1).item.key }
                }
            }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        let invalid = await rpcLikeError { try await queue.perform { try $0.create(createRequest(""), now: 1) } }
        #expect(invalid != nil)
        queue.close()
        let store = try ItemStore(path: path)
        #expect(Set(try allItems(store).map(\.key)) == keys && keys.count == 200)
    }

    func rpcLikeError<T>(_ body: () async throws -> T) async -> (any Error)? {
        do {
            _ = try await body()
            return nil
        } catch {
            return error
        }
    }
}
