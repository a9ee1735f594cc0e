import Foundation
import JPEG
import Proto
import RPC
import Runtime
import SQLite
import Testing
import TestSupport
import ZMQ
@testable import ImageService
import RPCTestSupport

/// When a photo was taken (`ImageInfo.taken_at`, from its EXIF): recorded by PutImage and
/// CommitUpload, answered by every call that answers an ImageInfo, carried by edits and
/// thumbnails, and filled in for the rows of an images.db from before it was recorded.
@Suite struct TakenAtTests {
    /// What `ultrahdr.jpg`'s phone wrote: DateTimeOriginal with its OffsetTimeOriginal.
    static let phoneTakenAt = "2024-05-07T09:33:04+08:00"

    /// A whole JPEG with a phone's real metadata: the segments of the cut-off `ultrahdr.jpg`
    /// up to its DQT (EXIF with both date tags, ICC, XMP, MPF), then a small image's own.
    static func phonePhoto() throws -> [UInt8] {
        let cutOff = try Fixtures.pillowImage("ultrahdr.jpg")
        let primary = try Samples.jpeg(width: 120, height: 90)
        return Array(cutOff[..<JPEGSplice.offset(of: [0xDB], in: cutOff)]) + Array(primary[JPEGSplice.offset(of: [0xDB], in: primary)...])
    }

    /// `Samples.jpeg` with an APP1 holding DateTimeOriginal `date` and, if given, `offset`.
    static func dated(_ date: String, offset: String? = nil, width: Int = 64) throws -> [UInt8] {
        let entries = [EXIFSamples.dateTimeOriginal(date)] + (offset.map { [EXIFSamples.offsetTimeOriginal($0)] } ?? [])
        return EXIFSamples.inserting(EXIFSamples.app1(entries), into: try Samples.jpeg(width: width, height: 48))
    }

    static func put(_ client: RPCClient, _ data: [UInt8], kind: ImageKind = .original, parent: String = "") async throws -> ImageInfo {
        var request = PutImageRequest()
        request.data = data
        request.ownerKey = "item"
        request.kind = kind
        request.parentKey = parent
        return try await client.call(ImageServiceRPC.putImage, request)
    }

    static func stat(_ client: RPCClient, _ key: String) async throws -> ImageInfo {
        var request = StatImageRequest()
        request.key = key
        return try await client.call(ImageServiceRPC.statImage, request)
    }

    @Test func putAndCommitUploadRecordWhenAPhotoWasTakenAndEveryCallAnswersIt() async throws {
        let folder = try TemporaryFolder()
        let host = try ImageServiceHostTests.start(folder)
        defer { host.stop() }
        let client = try ImageServiceHostTests.client(folder)
        defer { client.close() }
        let subscriber = try Socket(hostTestContext, .sub)
        defer { subscriber.close() }
        try subscriber.subscribe(Array(EventTopic.imageStored.utf8))
        try subscriber.connect("ipc://\(folder.path)/events.sock")
        // A subscription takes effect asynchronously: put until an event arrives.
        var warmUp = 0
        while try subscriber.receive(dontWait: true) == nil && warmUp < 200 {
            _ = try await Self.put(client, try Samples.jpeg(width: 16 + warmUp, height: 16))
            warmUp += 1
            try await Task.sleep(for: .milliseconds(20))
        }
        while try subscriber.receive(dontWait: true) != nil {}

        // PutImage of a phone's photo: the reply, StatImage, ListImages, GetImage, GetRendition.
        let phone = try await Self.put(client, try Self.phonePhoto())
        #expect(phone.takenAt == Self.phoneTakenAt)
        #expect(try await Self.stat(client, phone.key).takenAt == Self.phoneTakenAt)
        var list = ListImagesRequest()
        list.pageSize = 1000
        #expect(try await client.call(ImageServiceRPC.listImages, list).images.first { $0.key == phone.key }?.takenAt == Self.phoneTakenAt)
        var get = GetImageRequest()
        get.key = phone.key
        #expect(try await client.call(ImageServiceRPC.getImage, get).info?.takenAt == Self.phoneTakenAt)
        let rendition = try await RealWorldJPEGTests.rendition(client, phone.key, 40, 40)
        #expect(rendition.source?.takenAt == Self.phoneTakenAt && rendition.source?.key == phone.key)
        #expect(rendition.info?.kind == .thumbnail && rendition.info?.takenAt == Self.phoneTakenAt, "the rendition shows the same photo")

        // CommitUpload of a real file with a date and no offset, in chunks.
        let gps = try Fixtures.pillowImage("exif_gps.jpg")
        let uploaded = try await DocumentTests.commit(client, try await DocumentTests.upload(client, gps, chunk: 400))
        #expect(uploaded.takenAt == "2099-09-29T10:10:10")
        #expect(try await Self.stat(client, uploaded.key).takenAt == "2099-09-29T10:10:10")

        // An edit without EXIF of its own was taken when its photo was; one with its own date keeps it.
        let edit = try await Self.put(client, try Samples.jpeg(width: 40, height: 30), kind: .edited, parent: phone.key)
        #expect(edit.takenAt == Self.phoneTakenAt)
        let thumbnail = try await Self.put(client, try Samples.jpeg(width: 32, height: 24), kind: .thumbnail, parent: edit.key)
        #expect(thumbnail.takenAt == Self.phoneTakenAt, "a thumbnail of the edit, two levels down")
        let redated = try await Self.put(client, try Self.dated("2025:01:02 03:04:05", offset: "-05:00"), kind: .edited, parent: phone.key)
        #expect(redated.takenAt == "2025-01-02T03:04:05-05:00")
        #expect(try await Self.stat(client, edit.key).takenAt == Self.phoneTakenAt)

        // The events carry it.
        var events: [String: ImageInfo] = [:]
        let end = ContinuousClock.now + .seconds(10)
        while events.count < 5 && ContinuousClock.now < end {
            while let frames = try subscriber.receive(dontWait: true) {
                let info = try ImageEvent(serializedBytes: frames[1]).info ?? ImageInfo()
                events[info.key] = info
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        for stored in [phone, uploaded, edit, thumbnail, redated] {
            #expect(events[stored.key]?.takenAt == stored.takenAt, "image.stored of \(stored.key)")
        }
    }

    @Test func aJPEGWithoutADateAZeroDateAndWhatIsNoJPEGHaveNone() async throws {
        let folder = try TemporaryFolder()
        let host = try ImageServiceHostTests.start(folder)
        defer { host.stop() }
        let client = try ImageServiceHostTests.client(folder)
        defer { client.close() }
        let cases: [(String, [UInt8])] = [
            ("a JPEG without EXIF", try Samples.jpeg()),
            ("EXIF without DateTimeOriginal", try Samples.photo("Landscape_6.jpg")),
            ("the zeros a camera writes for unknown", try Self.dated("0000:00:00 00:00:00", offset: "+02:00")),
            ("month 13", try Self.dated("2024:13:01 10:00:00")),
            ("a PDF", SamplePDF.make()),
            ("a movie", Samples.mp4()),
        ]
        for (name, data) in cases {
            let info = try await Self.put(client, data)
            #expect(info.takenAt == "", "\(name)")
            #expect(try await Self.stat(client, info.key).takenAt == "", "\(name)")
        }
        // Uploaded, the same.
        let uploaded = try await DocumentTests.commit(client, try await DocumentTests.upload(client, try Samples.jpeg(), chunk: 1000))
        #expect(uploaded.takenAt == "")
        // A malformed offset is left out; the date stays.
        #expect(try await Self.put(client, try Self.dated("2024:05:07 09:33:04", offset: "+25:00")).takenAt == "2024-05-07T09:33:04")
    }
}
