import Foundation
import Proto
import Testing
@testable import ImageService

/// Deletes hold the claims of the keys they remove, as puts do, from before the rows go until
/// the files are gone: a put and a delete of one key never interleave. Each test stops one call
/// at a hook and runs the other against it, so the order is the same on every run.
@Suite struct DeleteOrderingTests {
    @Test func aPutArrivingWhileADeleteOfItsKeyUnlinksWaitsForItAndItsBytesSurvive() async throws {
        let folder = try TemporaryFolder()
        let hooks = StoreHooks()
        let store = try makeStore(folder, budget: 1024, hooks: hooks)  // nothing cached: reads go to the file
        defer { store.close() }
        let key = UUID().uuidString.lowercased()
        let old = Samples.mp4(5000), new = Samples.mp4(7000)
        _ = try await store.put(old, NewImage(key: key))

        // The delete has removed the row and is about to unlink the file.
        let gate = Gate()
        hooks.set { $0.beforeRemovingFiles = { keys in if keys.contains(key) { gate.pass() } } }
        let deletion = Tracked { try await store.delete(key) }
        #expect(await eventually { gate.arrived })
        let put = Tracked { try await store.put(new, NewImage(key: key)) }
        #expect(await eventually { store.claims.waiters(key) == 1 || put.hasEnded })
        let acknowledgedDuringTheDelete = put.hasEnded
        gate.open()

        #expect(try await deletion.value.map(\.key) == [key])
        let (info, created) = try await put.value
        #expect(created && info.key == key)
        #expect(!acknowledgedDuringTheDelete, "the put was acknowledged while the delete of its key was unlinking")
        // What was acknowledged reads back whole, never DATA_LOSS; after a restart too.
        #expect(try await store.read(info) == new)
        store.close()
        let reopened = try makeStore(folder, budget: 1024)
        defer { reopened.close() }
        #expect(try await reopened.read(try await reopened.info(key)) == new)
    }

    @Test func aPutOfAKeyThatDeleteImagesForOwnerIsRemovingWaitsForItAndItsBytesSurvive() async throws {
        let folder = try TemporaryFolder()
        let hooks = StoreHooks()
        let store = try makeStore(folder, budget: 1024, hooks: hooks)
        defer { store.close() }
        let original = try await store.put(try Samples.jpeg(), NewImage(ownerKey: "item-1")).info
        let thumbnail = try await store.put(
            try Samples.jpeg(width: 16, height: 12), NewImage(kind: .thumbnail, parentKey: original.key)).info
        let other = try await store.put(Samples.mp4(3000), NewImage(ownerKey: "item-1")).info

        let gate = Gate()
        hooks.set { $0.beforeRemovingFiles = { _ in gate.pass() } }
        let deletion = Tracked { try await store.deleteForOwner("item-1") }
        #expect(await eventually { gate.arrived })
        // The thumbnail's key (removed by the cascade, not named in the call) stored again.
        let new = Samples.mp4(9000)
        let put = Tracked { try await store.put(new, NewImage(ownerKey: "item-2", key: thumbnail.key)) }
        #expect(await eventually { store.claims.waiters(thumbnail.key) == 1 || put.hasEnded })
        let acknowledgedDuringTheDelete = put.hasEnded
        gate.open()

        #expect(Set(try await deletion.value.map(\.key)) == [original.key, thumbnail.key, other.key])
        let (info, created) = try await put.value
        #expect(created && info.ownerKey == "item-2")
        #expect(!acknowledgedDuringTheDelete, "the put was acknowledged while DeleteImagesForOwner was unlinking its key")
        #expect(try await store.read(info) == new)
        #expect(try await store.list().images.map(\.key) == [thumbnail.key])
    }

    @Test func aDeleteArrivingWhileAPutOfItsKeyIsFinishingWaitsForThePut() async throws {
        let folder = try TemporaryFolder()
        let hooks = StoreHooks()
        let store = try makeStore(folder, budget: 1024, hooks: hooks)
        defer { store.close() }
        let key = UUID().uuidString.lowercased()

        // The put's row is committed (visible to others) and the put has not answered yet.
        let gate = Gate()
        hooks.set { $0.afterPutCommitted = { committed in if committed == key { gate.pass() } } }
        let put = Tracked { try await store.put(Samples.mp4(4000), NewImage(key: key)) }
        #expect(await eventually { gate.arrived })
        let deletion = Tracked { try await store.delete(key) }
        #expect(await eventually { store.claims.waiters(key) == 1 || deletion.hasEnded })
        let deletedDuringThePut = deletion.hasEnded
        gate.open()

        #expect(try await put.value.created)
        #expect(try await deletion.value.map(\.key) == [key])
        #expect(!deletedDuringThePut, "the delete ran while a put of its key held the key")
        // Both row and file are gone, and nothing is left for start-up to find.
        #expect(await storeError { try await store.info(key) } == .notFound("key \(key): no such image"))
        #expect(!store.blobs.exists(key: key))
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.blobs.temporaryFolder).isEmpty)
    }

    @Test func aPutOfAKeyThatAnotherPutHoldsIsStillToldToRetry() async throws {
        let folder = try TemporaryFolder()
        let hooks = StoreHooks()
        let store = try makeStore(folder, hooks: hooks)
        defer { store.close() }
        let key = UUID().uuidString.lowercased()
        let gate = Gate()
        hooks.set { $0.afterPutCommitted = { committed in if committed == key { gate.pass() } } }
        let first = Tracked { try await store.put(Samples.mp4(4000), NewImage(key: key)) }
        #expect(await eventually { gate.arrived })
        let second = await storeError { try await store.put(Samples.mp4(5000), NewImage(key: key)) }
        #expect(second == .aborted("another put of key \(key) is in progress; retry"))
        gate.open()
        let stored = try await first.value.info
        #expect(try await store.put(Samples.mp4(5000), NewImage(key: key)) == (stored, false))
    }
}

/// A child (THUMBNAIL, EDITED) is checked against its parent before it is written and again
/// in the transaction that adds its row: a delete of the parent in between leaves no child
/// pointing at nothing.
@Suite struct ChildOfADeletedParentTests {
    @Test func aThumbnailPutWhoseParentIsDeletedWhileItWritesIsRefusedAndLeavesNothing() async throws {
        let folder = try TemporaryFolder()
        let hooks = StoreHooks()
        let store = try makeStore(folder, budget: 1024, hooks: hooks)
        defer { store.close() }
        let original = try await store.put(try Samples.jpeg(), NewImage(ownerKey: "item-1")).info
        let thumbnailKey = UUID().uuidString.lowercased()

        // The thumbnail passed its parent check and is about to be written.
        let gate = Gate()
        hooks.set { $0.beforePutWrites = { key in if key == thumbnailKey { gate.pass() } } }
        let thumbnail = try Samples.jpeg(width: 16, height: 12)
        let put = Tracked {
            try await store.put(thumbnail, NewImage(kind: .thumbnail, parentKey: original.key, key: thumbnailKey))
        }
        #expect(await eventually { gate.arrived })
        #expect(try await store.delete(original.key).map(\.key) == [original.key])
        gate.open()

        let refused = await storeError { try await put.value }
        #expect(refused == .notFound("parent_key \(original.key): no such image (deleted while this image was being stored)"))
        #expect(try await store.list().images.isEmpty)
        #expect(!store.blobs.exists(key: thumbnailKey), "the refused thumbnail's blob was left behind")
        // After a restart too: nothing in the index, nothing quarantined.
        store.close()
        let reopened = try makeStore(folder, budget: 1024)
        defer { reopened.close() }
        #expect(try await reopened.list().images.isEmpty)
    }
}

/// A put that waited for its key (behind a delete of it) until its call's deadline passed
/// writes nothing when its turn comes: its caller was answered DEADLINE_EXCEEDED.
@Suite struct AbandonedPutTests {
    @Test func aPutThatWaitedPastItsDeadlineForADeleteOfItsKeyStoresNothing() async throws {
        let folder = try TemporaryFolder()
        let hooks = StoreHooks()
        let store = try makeStore(folder, budget: 1024, hooks: hooks)
        defer { store.close() }
        let key = UUID().uuidString.lowercased()
        _ = try await store.put(Samples.mp4(5000), NewImage(key: key))

        let gate = Gate()
        hooks.set { $0.beforeRemovingFiles = { keys in if keys.contains(key) { gate.pass() } } }
        let deletion = Tracked { try await store.delete(key) }
        #expect(await eventually { gate.arrived })
        let deadline = ContinuousClock.now + .milliseconds(100)
        let put = Tracked {
            try await store.put(Samples.mp4(7000), NewImage(key: key), abandoned: { ContinuousClock.now > deadline })
        }
        #expect(await eventually { store.claims.waiters(key) == 1 })
        // The deadline passes while the put waits for the delete's claim.
        try await Task.sleep(until: deadline + .milliseconds(50))
        gate.open()
        #expect(try await deletion.value.map(\.key) == [key])
        do {
            _ = try await put.value
            Issue.record("the put stored its image after its deadline had passed")
        } catch {
            #expect(error is CancellationError, "\(error)")
        }
        let lookup = await storeError { try await store.info(key) }
        guard case .notFound = lookup else {
            Issue.record("expected NOT_FOUND, got \(String(describing: lookup))")
            return
        }
        #expect(!store.blobs.exists(key: key))
        // The same put on time is stored.
        #expect(try await store.put(Samples.mp4(7000), NewImage(key: key)).created)
    }
}
