import Foundation
import Proto
import RPC
import SQLite
import Testing
import TestSupport
@testable import ImageService

/// images.db from before `taken_at` (schema 8): it opens, migrates, and its JPEG rows are filled
/// in from the head of their blobs by the backfill, which the service runs on its own.
@Suite struct TakenAtMigrationTests {
    /// Makes `folder`'s images.db what schema 8 left: no `taken_at` column, user_version 8.
    static func downgradeToSchema8(_ path: String) throws {
        let db = try Database(path: path)
        try db.execute("ALTER TABLE images DROP COLUMN taken_at")
        try db.setUserVersion(8)
        try db.close()
    }

    /// The `taken_at` column of every row, by key: nil for NULL.
    static func column(_ store: ImageStore) async throws -> [String: String?] {
        let rows = try await store.indexRead { index in
            try index.db.query("SELECT key, taken_at FROM images").map { ($0[0].stringValue ?? "", $0[1].stringValue) }
        }
        return Dictionary(uniqueKeysWithValues: rows)
    }

    @Test func anImagesDBOfSchema8OpensUpgradesAndItsJPEGsAreBackfilledFromTheirBlobs() async throws {
        let folder = try TemporaryFolder()
        var store = try makeStore(folder)
        let phone = try await store.put(try TakenAtTests.phonePhoto(), NewImage(ownerKey: "item")).info
        let gps = try await store.put(try Fixtures.pillowImage("exif_gps.jpg"), NewImage(ownerKey: "item")).info
        let undated = try await store.put(try Samples.jpeg(), NewImage(ownerKey: "item")).info
        let edit = try await store.put(try Samples.jpeg(width: 32, height: 24), NewImage(kind: .edited, parentKey: phone.key)).info
        let thumbnail = try await store.put(try Samples.jpeg(width: 16, height: 12), NewImage(kind: .thumbnail, parentKey: edit.key)).info
        let pdf = try await store.put(SamplePDF.make(), NewImage(ownerKey: "item")).info
        let lost = try await store.put(try Fixtures.pillowImage("exif_gps.jpg") + [0], NewImage(ownerKey: "item")).info
        #expect([phone, gps, undated, edit, thumbnail, pdf].map(\.takenAt)
            == [TakenAtTests.phoneTakenAt, "2099-09-29T10:10:10", "", TakenAtTests.phoneTakenAt, TakenAtTests.phoneTakenAt, ""])
        store.close()
        try Self.downgradeToSchema8(folder.path + "/images/images.db")
        // A blob gone while the service was down: its row stays, and so does its NULL.
        try FileManager.default.removeItem(atPath: store.blobs.path(of: lost.key))

        store = try makeStore(folder)
        defer { store.close() }
        #expect(try await store.indexRead { try $0.db.userVersion } == 9)
        // Migrated: every JPEG row NULL (not looked at yet), read as none; every other row "".
        let migrated = try await Self.column(store)
        #expect(migrated.filter { $0.value == nil }.keys.sorted() == [phone, gps, undated, edit, thumbnail, lost].map(\.key).sorted())
        #expect(migrated[pdf.key] == .some(""))
        #expect(try await store.info(phone.key).takenAt == "")
        #expect(try await store.list(ownerKey: "item").images.allSatisfy { $0.takenAt.isEmpty })

        // Pages of two: the thumbnail's parent (the edit) is dated in the page before its own.
        let report = try await store.backfillTakenAt(pageSize: 2)
        #expect(report == ImageStore.TakenAtBackfillReport(filled: 5, unreadable: 1))
        for (image, expected) in [(phone, TakenAtTests.phoneTakenAt), (gps, "2099-09-29T10:10:10"), (undated, ""),
                                  (edit, TakenAtTests.phoneTakenAt), (thumbnail, TakenAtTests.phoneTakenAt), (pdf, ""), (lost, "")] {
            #expect(try await store.info(image.key).takenAt == expected, "\(image.key)")
        }
        let after = try await Self.column(store)
        #expect(after.filter { $0.value == nil }.keys.sorted() == [lost.key], "the unreadable one is tried again at the next start")
        // Done: a second pass finds only the unreadable one, and changes nothing.
        #expect(try await store.backfillTakenAt() == ImageStore.TakenAtBackfillReport(filled: 0, unreadable: 1))
        // A row stored again under its key since is its own (dated) row: the backfill leaves it.
        #expect(try await store.put(try TakenAtTests.phonePhoto(), NewImage(key: lost.key)).info.takenAt == TakenAtTests.phoneTakenAt)
        #expect(try await store.backfillTakenAt() == ImageStore.TakenAtBackfillReport(filled: 0, unreadable: 0))
    }

    @Test func aServiceStartedOnAnOlderImagesDBFillsInWhenItsPhotosWereTakenOnItsOwn() async throws {
        let folder = try TemporaryFolder()
        var host = try ImageServiceHostTests.start(folder)
        let client = try ImageServiceHostTests.client(folder)
        defer { client.close() }
        let phone = try await TakenAtTests.put(client, try TakenAtTests.phonePhoto())
        let edit = try await TakenAtTests.put(client, try Samples.jpeg(width: 32, height: 24), kind: .edited, parent: phone.key)
        #expect(phone.takenAt == TakenAtTests.phoneTakenAt && edit.takenAt == TakenAtTests.phoneTakenAt)
        host.stop()
        try Self.downgradeToSchema8(folder.path + "/data/images/images.db")

        host = try ImageServiceHostTests.start(folder)
        defer { host.stop() }
        // The backfill runs beside the calls, after the start: soon both are dated again.
        let end = ContinuousClock.now + .seconds(20)
        var seen: [String] = []
        while ContinuousClock.now < end {
            seen = [try await TakenAtTests.stat(client, phone.key).takenAt, try await TakenAtTests.stat(client, edit.key).takenAt]
            if seen == [TakenAtTests.phoneTakenAt, TakenAtTests.phoneTakenAt] { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(seen == [TakenAtTests.phoneTakenAt, TakenAtTests.phoneTakenAt])
    }
}
