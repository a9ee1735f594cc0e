import Foundation
import Proto
import SQLite
import Testing
@testable import ImageService

/// DeleteImagesForOwner as the item delete cascade uses it: the owner's images, the photos
/// attached only to it, and no new image for the owner afterwards, however late it arrives.
@Suite struct DeletedOwnerTests {
    static let owner = UUID().uuidString.lowercased()

    static func isRefusedForTheDeletedOwner(_ error: ImageStoreError?) -> Bool {
        guard case .failedPrecondition(let message)? = error else { return false }
        return message.contains(owner) && message.contains("deleted")
    }

    @Test func anOwnerDeletedForGoodGetsNoNewImageNotEvenAfterARestart() async throws {
        let folder = try TemporaryFolder()
        var store = try makeStore(folder)
        let before = try await store.put(try Samples.jpeg(), NewImage(ownerKey: Self.owner)).info
        let removed = try await store.deleteForOwner(Self.owner, ownerDeleted: true)
        #expect(removed.map(\.key) == [before.key])
        for _ in 0..<2 {
            let put = await storeError { try await store.put(try Samples.jpeg(), NewImage(ownerKey: Self.owner)) }
            #expect(Self.isRefusedForTheDeletedOwner(put), "\(String(describing: put))")
            let begin = await storeError { try await store.beginUpload(NewImage(ownerKey: Self.owner), totalSize: 100, checksum: "") }
            #expect(Self.isRefusedForTheDeletedOwner(begin), "\(String(describing: begin))")
            store.close()
            store = try makeStore(folder)
        }
        #expect(try await store.list(ownerKey: Self.owner).images.isEmpty)
        #expect(store.blobs.allKeys().isEmpty)
        // Other owners, and no owner, are not affected; a repeat of the cascade is harmless.
        _ = try await store.put(try Samples.jpeg(), NewImage(ownerKey: "someone-else"))
        _ = try await store.put(try Samples.jpeg(), NewImage())
        #expect(try await store.deleteForOwner(Self.owner, ownerDeleted: true).isEmpty)
        store.close()
    }

    @Test func deletingAnOwnersImagesWithoutOwnerDeletedLetsItStoreMore() async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder)
        defer { store.close() }
        _ = try await store.put(try Samples.jpeg(), NewImage(ownerKey: "album"))
        #expect(try await store.deleteForOwner("album").count == 1)
        _ = try await store.put(try Samples.jpeg(), NewImage(ownerKey: "album"))
        #expect(try await store.list(ownerKey: "album").images.count == 1)
    }

    @Test func anUploadBegunBeforeTheCascadeIsRefusedAtCommitAndLeavesNothing() async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder)
        defer { store.close() }
        let data = try Samples.jpeg(width: 320, height: 240)
        let ticket = try await store.beginUpload(NewImage(ownerKey: Self.owner), totalSize: Int64(data.count), checksum: "")
        _ = try await store.appendUpload(ticket.uploadID, offset: 0, data: data)
        _ = try await store.deleteForOwner(Self.owner, ownerDeleted: true)
        let commit = await storeError { try await store.commitUpload(ticket.uploadID, checksum: "") }
        #expect(Self.isRefusedForTheDeletedOwner(commit), "\(String(describing: commit))")
        #expect(try await store.list().images.isEmpty)
        #expect(store.blobs.allKeys().isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.blobs.temporaryFolder).isEmpty)
    }

    @Test func aPutPastTheEarlyCheckIsRefusedWhereItsRowWouldCommit() async throws {
        // A put that was checked before the cascade and reaches its commit after it: the row's
        // own transaction refuses it, and neither the blob nor its temporary file stays.
        let folder = try TemporaryFolder()
        let store = try makeStore(folder)
        defer { store.close() }
        let data = try Samples.jpeg()
        let key = UUID().uuidString.lowercased()
        let media = try ImageStore.classify(data, maxPixels: 1 << 26)
        let info = store.makeInfo(NewImage(ownerKey: Self.owner, key: key), media: media, size: Int64(data.count), checksum: "sha256:x")
        _ = try await store.deleteForOwner(Self.owner, ownerDeleted: true)
        let temporary = try store.blobs.writeTemporary(data, key: key)
        let placed = await storeError {
            try await store.onDisk { try store.blobs.rename(temporary: temporary, key: key) }
            try await store.indexPlaced(StoredImage(info: info, contentCheck: ""))
        }
        #expect(Self.isRefusedForTheDeletedOwner(placed), "\(String(describing: placed))")
        #expect(try await store.list().images.isEmpty)
        #expect(!store.blobs.exists(key: key))
        #expect(!FileManager.default.fileExists(atPath: temporary))
    }

    @Test func attachedKeysGoWithTheOwnerWhenTheyAreItsOrNoOnesWithWhatWasMadeFromThem() async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder)
        defer { store.close() }
        let mine = try await store.put(try Samples.jpeg(), NewImage(ownerKey: Self.owner)).info
        let foreign = try await store.put(try Samples.jpeg(), NewImage(ownerKey: "someone-else")).info
        let ownerless = try await store.put(try Samples.jpeg(), NewImage()).info
        let thumbnail = try await store.put(
            try Samples.jpeg(width: 8, height: 6), NewImage(kind: .thumbnail, parentKey: ownerless.key)).info
        let kept = try await store.put(try Samples.jpeg(), NewImage(ownerKey: "someone-else")).info

        let bad = await storeError { try await store.deleteForOwner(Self.owner, attachedKeys: [ownerless.key, "nope"]) }
        #expect(bad == .invalid("attached_keys[1] \"nope\" is not a UUID"))
        let tooMany = Array(repeating: ownerless.key, count: ImageStore.maxAttachedKeys + 1)
        #expect(await storeError { try await store.deleteForOwner(Self.owner, attachedKeys: tooMany) } != nil)
        #expect(try await store.list().images.count == 5)

        // An attached image of another owner is that owner's: AttachPhoto never admits one, so
        // it can only be a key deleted and stored again since (below) and stays.
        let removed = try await store.deleteForOwner(
            Self.owner, attachedKeys: [foreign.key.uppercased(), ownerless.key, mine.key, UUID().uuidString], ownerDeleted: true)
        #expect(Set(removed.map(\.key)) == [mine.key, ownerless.key, thumbnail.key] && removed.count == 3)
        #expect(try await store.list().images.map(\.key) == [foreign.key, kept.key])
        #expect(Set(store.blobs.allKeys()) == [foreign.key, kept.key])
    }

    @Test func aPendingCascadeLeavesAnAttachedKeyStoredAgainForAnotherOwner() async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder)
        defer { store.close() }
        let item = UUID().uuidString.lowercased(), other = UUID().uuidString.lowercased()
        // The item's photos when it was deleted (its cascade records their keys): one of its
        // own, one of no owner.
        let ownKey = UUID().uuidString.lowercased(), ownerlessKey = UUID().uuidString.lowercased()
        _ = try await store.put(try Samples.jpeg(), NewImage(ownerKey: item, key: ownKey))
        _ = try await store.put(try Samples.jpeg(), NewImage(key: ownerlessKey))
        // Before the cascade arrives, both keys are deleted and stored again (keys may be
        // reused): one for another owner, one for no owner.
        for key in [ownKey, ownerlessKey] { _ = try await store.delete(key) }
        let restored = try await store.put(try Samples.jpeg(width: 20, height: 10), NewImage(ownerKey: other, key: ownKey)).info
        let thumbnail = try await store.put(try Samples.jpeg(width: 8, height: 4), NewImage(kind: .thumbnail, parentKey: ownKey)).info
        let ownerlessAgain = try await store.put(try Samples.jpeg(width: 20, height: 10), NewImage(key: ownerlessKey)).info

        let removed = try await store.deleteForOwner(item, attachedKeys: [ownKey, ownerlessKey], ownerDeleted: true)
        #expect(removed.map(\.key) == [ownerlessAgain.key])
        #expect(try await store.info(ownKey) == restored)
        #expect(try await store.info(thumbnail.key).ownerKey == other)
        #expect(try await store.read(restored) == (try Samples.jpeg(width: 20, height: 10)))
        #expect(await storeError { try await store.info(ownerlessKey) } == .notFound("key \(ownerlessKey): no such image"))
    }

    @Test func anOwnerKeyThatIsAUUIDIsStoredLowerCaseAndMatchedInEitherCase() async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder)
        defer { store.close() }
        let item = UUID().uuidString.lowercased(), upper = item.uppercased()
        let put = try await store.put(try Samples.jpeg(), NewImage(ownerKey: upper)).info
        #expect(put.ownerKey == item)
        let thumbnail = try await store.put(try Samples.jpeg(width: 8, height: 6), NewImage(kind: .thumbnail, parentKey: put.key)).info
        #expect(thumbnail.ownerKey == item)
        let data = try Samples.jpeg(width: 32, height: 24)
        let ticket = try await store.beginUpload(NewImage(ownerKey: upper), totalSize: Int64(data.count), checksum: "")
        _ = try await store.appendUpload(ticket.uploadID, offset: 0, data: data)
        let uploaded = try await store.commitUpload(ticket.uploadID, checksum: "")
        #expect(uploaded.ownerKey == item)
        #expect(try await store.info(put.key).ownerKey == item)
        for owner in [item, upper, "\(item.prefix(9))\(item.dropFirst(9).uppercased())"] {
            #expect(try await store.list(ownerKey: owner).images.map(\.key) == [put.key, thumbnail.key, uploaded.key], "\(owner)")
        }
        // Free text that is not a UUID is kept and matched as sent.
        let album = try await store.put(try Samples.jpeg(), NewImage(ownerKey: "Album-2024")).info
        #expect(album.ownerKey == "Album-2024")
        #expect(try await store.list(ownerKey: "album-2024").images.isEmpty)
        #expect(try await store.deleteForOwner("album-2024").isEmpty)

        // Deleted by the other spelling, with what was made from them.
        #expect(Set(try await store.deleteForOwner(upper).map(\.key)) == [put.key, thumbnail.key, uploaded.key])
        let again = try await store.put(try Samples.jpeg(), NewImage(ownerKey: item)).info
        #expect(try await store.deleteForOwner(upper, ownerDeleted: true).map(\.key) == [again.key])
        // Retired in upper case: refused in lower case, and the other way round.
        let refused = await storeError { try await store.put(try Samples.jpeg(), NewImage(ownerKey: item)) }
        guard case .failedPrecondition(let message)? = refused else {
            Issue.record("\(String(describing: refused))")
            return
        }
        #expect(message.hasPrefix("owner_key \(item) was deleted at ") && message.contains("(item \(item) was deleted"), "\(message)")
        let other = UUID().uuidString.lowercased()
        _ = try await store.deleteForOwner(other, ownerDeleted: true)
        let upperPut = await storeError { try await store.put(try Samples.jpeg(), NewImage(ownerKey: other.uppercased())) }
        #expect(upperPut.map { if case .failedPrecondition = $0 { true } else { false } } == true, "\(String(describing: upperPut))")
        let upperUpload = await storeError { try await store.beginUpload(NewImage(ownerKey: other.uppercased()), totalSize: 10, checksum: "") }
        #expect(upperUpload.map { if case .failedPrecondition = $0 { true } else { false } } == true, "\(String(describing: upperUpload))")
        #expect(try await store.list().images.map(\.key) == [album.key])
    }

    @Test func ownerKeysStoredInUpperCaseByAnEarlierVersionAreMadeLowerCaseAtStart() async throws {
        let folder = try TemporaryFolder()
        var store = try makeStore(folder)
        let item = UUID().uuidString.lowercased(), retired = UUID().uuidString.lowercased()
        let image = try await store.put(try Samples.jpeg(), NewImage(ownerKey: item)).info
        let album = try await store.put(try Samples.jpeg(), NewImage(ownerKey: "Album")).info
        _ = try await store.deleteForOwner(retired, ownerDeleted: true)
        store.close()
        // What an earlier version wrote: the owner keys as the client sent them.
        let db = try Database(path: folder.path + "/images/images.db")
        try db.execute("UPDATE images SET owner_key = upper(owner_key) WHERE owner_key = ?", [.text(item)])
        try db.execute("UPDATE deleted_owners SET owner_key = upper(owner_key)")
        try db.execute("INSERT INTO deleted_owners (owner_key, deleted_at_ms) VALUES ('NOT-A-UUID', 1)")
        // One owner retired twice, spelt two ways: the earlier time stays.
        let twice = UUID().uuidString.lowercased()
        try db.execute("INSERT INTO deleted_owners (owner_key, deleted_at_ms) VALUES (?, 5), (?, 3)", [.text(twice), .text(twice.uppercased())])
        // Without what versions after 4 added (migration 6: thumbnail sizes; 7: uploads; 9: taken_at).
        try db.execute(
            "DROP INDEX images_thumbnails; ALTER TABLE images DROP COLUMN thumbnail_size; DROP TABLE uploads; ALTER TABLE images DROP COLUMN taken_at")
        try db.setUserVersion(4)
        try db.close()

        store = try makeStore(folder)
        defer { store.close() }
        #expect(try await store.info(image.key).ownerKey == item)
        #expect(try await store.info(album.key).ownerKey == "Album")
        #expect(try await store.list(ownerKey: item).images.map(\.key) == [image.key])
        let refused = await storeError { try await store.put(try Samples.jpeg(), NewImage(ownerKey: retired)) }
        #expect(refused.map { if case .failedPrecondition = $0 { true } else { false } } == true, "\(String(describing: refused))")
        let rows = try await store.indexRead {
            try $0.db.query("SELECT owner_key, deleted_at_ms FROM deleted_owners").map { "\($0[0].stringValue ?? "") \($0[1].int64Value ?? 0)" }
        }
        #expect(Set(rows.map { String($0.split(separator: " ")[0]) }) == ["NOT-A-UUID", retired, twice] && rows.count == 3, "\(rows)")
        #expect(rows.contains("\(twice) 3") && rows.contains("NOT-A-UUID 1"), "\(rows)")
    }
}
