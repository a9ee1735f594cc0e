@testable import ClaimReport
import Foundation
import Proto
import RPC
import Runtime
import Testing
import TestSupport

/// How the report asks for photos: one call per photo it shows (GetRendition, whose `source`
/// is the photo's info), StatImage only for what has no rendition or when there is no
/// thumbnail to fetch; and a photo attached to several items is in the output once.
@Suite(.serialized) struct ClaimPhotoLookupTests {
    /// StatImage and GetRendition calls the image service has answered so far (Metrics/Stats).
    static func imageCalls(_ fixture: ClaimFixture) async throws -> ClaimGatherer.Calls {
        let stats = try await fixture.clients.images.call(MetricsRPC.stats, ProcessStatsRequest(), options: fixture.options)
        func calls(_ path: String) -> Int { Int(stats.methods.first { $0.method == path }?.calls ?? 0) }
        return ClaimGatherer.Calls(stat: calls(ImageServiceRPC.statImage.path), rendition: calls(ImageServiceRPC.getRendition.path))
    }

    /// StatImage of `key`.
    static func stat(_ fixture: ClaimFixture, _ key: String) async throws -> ImageInfo {
        var request = StatImageRequest()
        request.key = key
        return try await fixture.clients.images.call(ImageServiceRPC.statImage, request, options: fixture.options)
    }

    @Test func aReportOfNJPEGPhotosMakesNImageServiceCallsNot2N() async throws {
        let fixture = try await ClaimFixture()
        defer { fixture.shutdown() }
        let jpegs = fixture.jpegPhotos, documents = fixture.documents, photos = jpegs + documents
        #expect(jpegs == 7 && documents == 1)

        // PDF: one GetRendition per photo, none of the JPEGs asked about again; the PDF receipt,
        // which GetRendition refuses, then with StatImage. The service counts the same.
        let before = try await Self.imageCalls(fixture)
        let (_, summary, gatherer) = try await fixture.write(.pdf, "calls.pdf")
        let after = try await Self.imageCalls(fixture)
        let figures = gatherer.figures
        #expect(summary.thumbnails == Int64(jpegs) && figures.photosLookedUp == photos && figures.thumbnailsFetched == jpegs, "\(figures)")
        #expect(figures.renditionCalls == photos && figures.statCalls == documents, "\(figures)")
        #expect(after.rendition - before.rendition == photos && after.stat - before.stat == documents, "before \(before), after \(after)")
        // 7 calls for the 7 JPEGs and 2 for the receipt: 9, where StatImage + GetRendition made 16.
        #expect(figures.renditionCalls + figures.statCalls == jpegs + 2 * documents)

        // CSV: no thumbnails, StatImage alone, once per photo.
        let (_, _, csv) = try await fixture.write(.csv, "calls.csv")
        let afterCSV = try await Self.imageCalls(fixture)
        #expect(csv.figures.statCalls == photos && csv.figures.renditionCalls == 0, "\(csv.figures)")
        #expect(afterCSV.stat - after.stat == photos && afterCSV.rendition == after.rendition, "after \(after), after the CSV \(afterCSV)")

        // Each photo is gathered as StatImage describes it, as when it was asked first.
        let gathering = fixture.gatherer()
        let overview = try await gathering.overview(location: nil, asOf: "today", needsImages: true)
        var gathered: [ClaimPhoto] = []
        for section in overview.sections {
            try await gathering.forEachItem(of: section, overview: overview, thumbnails: true) { gathered += $0.photos }
        }
        #expect(gathered.count == photos)
        for photo in gathered {
            let stat = try await Self.stat(fixture, photo.key)
            #expect(photo.info == stat, "\(photo.key): gathered \(String(describing: photo.info)), StatImage \(stat)")
            if stat.contentType == "image/jpeg" {
                #expect(photo.thumbnail != nil && photo.unshown == nil, "\(photo.key)")
            } else {
                #expect(photo.thumbnail == nil && photo.unshown == "a PDF document", "\(photo.key): \(String(describing: photo.unshown))")
            }
        }
    }

    @Test func aMovieAndAPhotoDeletedAfterItWasAttachedAreListedWithTheirReasons() async throws {
        let fixture = try await ClaimFixture(populated: false)
        defer { fixture.shutdown() }
        let camcorder = try await fixture.item { $0.name = "Camcorder" }
        try await fixture.attach(Self.movie(), to: camcorder, role: .photo)
        try await fixture.attach(try Fixtures.orientationPhoto("Landscape_1.jpg"), to: camcorder, role: .serialPlate)
        let attached = try #require(fixture.items["Camcorder"]?.photos)
        #expect(attached.count == 2)
        let movieStat = try await Self.stat(fixture, attached[0].imageKey)
        #expect(movieStat.mediaType == .movie, "\(movieStat)")
        var delete = DeleteImageRequest()
        delete.key = attached[1].imageKey
        _ = try await fixture.clients.images.call(ImageServiceRPC.deleteImage, delete, options: fixture.options)

        let services = ClaimServices(clients: fixture.clients, endpoints: fixture.harness.endpoints, timeoutMilliseconds: 20_000)
        for thumbnails in [true, false] {
            // GetRendition refuses the movie (FAILED_PRECONDITION): StatImage says what it is.
            let movie = try await ClaimGatherer.lookUp(attached[0], thumbnails: thumbnails, edge: 256, services: services)
            #expect(movie.photo.info == movieStat && movie.photo.thumbnail == nil)
            #expect(movie.photo.unshown == (thumbnails ? "a movie (\(movieStat.contentType))" : nil), "\(String(describing: movie.photo.unshown))")
            #expect(movie.calls == ClaimGatherer.Calls(stat: 1, rendition: thumbnails ? 1 : 0), "\(movie.calls)")
            // The deleted one is NOT_FOUND to either call: missing, in one call.
            let gone = try await ClaimGatherer.lookUp(attached[1], thumbnails: thumbnails, edge: 256, services: services)
            #expect(gone.photo.info == nil && gone.photo.thumbnail == nil)
            #expect(gone.photo.unshown == "the image service has no image \(attached[1].imageKey) (deleted after it was attached)")
            #expect(gone.calls == ClaimGatherer.Calls(stat: thumbnails ? 0 : 1, rendition: thumbnails ? 1 : 0), "\(gone.calls)")
        }
    }

    @Test func anImageServiceOlderThanSourceIsAskedStatImageAsBefore() async throws {
        let fixture = try await ClaimFixture(populated: false)
        defer { fixture.shutdown() }
        let lamp = try await fixture.item { $0.name = "Lamp" }
        try await fixture.attach(try Fixtures.orientationPhoto("Landscape_3.jpg"), to: lamp, role: .photo)
        let photo = try #require(fixture.items["Lamp"]?.photos.first)

        // An image service whose GetRendition has no `source`, as one older than the field: the
        // real one behind a server that drops it, counting what it is asked.
        let endpoint = "inproc://claim-older-image-service-\(UUID().uuidString.prefix(8).lowercased())"
        let server = try RPCServer(
            context: fixture.harness.context, configuration: .init(endpoints: [endpoint], processName: "older-image-service"),
            logger: Logger(label: "older-image-service", level: .warning))
        let images = fixture.clients.images, options = fixture.options
        let asked = Shared(ClaimGatherer.Calls())
        server.register(ImageServiceRPC.statImage) { request, _ in
            asked.withLock { $0.stat += 1 }
            return try await images.call(ImageServiceRPC.statImage, request, options: options)
        }
        server.register(ImageServiceRPC.getRendition) { request, _ in
            asked.withLock { $0.rendition += 1 }
            var reply = try await images.call(ImageServiceRPC.getRendition, request, options: options)
            reply.source = nil
            return reply
        }
        try server.start()
        defer { server.stop() }
        let client = try RPCClient(context: fixture.harness.context, endpoint: endpoint)
        defer { client.close() }

        let services = ClaimServices(items: fixture.clients.items, images: client, imageEndpoint: endpoint, timeoutMilliseconds: 20_000)
        let (found, calls) = try await ClaimGatherer.lookUp(photo, thumbnails: true, edge: 256, services: services)
        let stat = try await Self.stat(fixture, photo.imageKey)
        #expect(found.info == stat && found.thumbnail != nil && found.unshown == nil, "\(String(describing: found.info))")
        #expect(calls == ClaimGatherer.Calls(stat: 1, rendition: 1) && asked.value == calls, "made \(calls), asked \(asked.value)")
    }

    @Test func aPhotoAttachedToTwoItemsIsEmbeddedOnceAndShownByBoth() async throws {
        let fixture = try await ClaimFixture(populated: false)
        defer { fixture.shutdown() }
        let lamp = try await fixture.item { $0.name = "Lamp" }
        let shade = try await fixture.item { $0.name = "Lamp shade" }
        // One photo of both (stored with no owner, so either may attach it), one of the shade alone.
        var put = PutImageRequest()
        put.data = try Fixtures.orientationPhoto("Landscape_1.jpg")
        let common = try await fixture.clients.images.call(ImageServiceRPC.putImage, put, options: fixture.options)
        for item in [lamp, shade] {
            var attach = AttachPhotoRequest()
            attach.itemKey = item.key
            attach.imageKey = common.key
            _ = try await fixture.clients.items.call(ItemServiceRPC.attachPhoto, attach, options: fixture.options)
        }
        try await fixture.attach(try Fixtures.orientationPhoto("Portrait_3.jpg"), to: shade, role: .serialPlate)
        fixture.jpegPhotos = 2
        try await fixture.waitForThumbnails()

        let (path, summary, gatherer) = try await fixture.write(.pdf, "common-photo.pdf")
        try await Tool.checkStructure(of: path)
        #expect(summary.thumbnails == 3 && gatherer.figures.thumbnailsFetched == 3, "\(summary)")
        // Three tiles drawn from two images in the file, one per key: the common one twice (the
        // lamp's tile and the shade's), from one object.
        let images = try await Tool.images(in: path)
        #expect(images.count == 3 && Set(images.map(\.object)).count == 2, "\(images)")
        let shown = Dictionary(grouping: images, by: \.object).mapValues(\.count)
        #expect(shown.values.sorted() == [1, 2], "\(shown)")
        let draws = try Self.imageDraws(in: path)
        #expect(draws.values.sorted() == [1, 2] && Set(draws.keys) == Set(shown.keys.map { "Im\($0)" }), "\(draws)")
        let text = try await Tool.text(of: path)
        #expect(text.contains("Lamp shade") && text.contains("Serial plate"))

        // The HTML: one file per key, shown by both items.
        let (folder, htmlSummary, _) = try await fixture.write(.html, "common-photo")
        let html = try String(contentsOfFile: folder + "/index.html", encoding: .utf8)
        let sources = ClaimHTMLReportTests.values(of: "src", in: html)
        #expect(htmlSummary.thumbnails == 3 && sources.count == 3 && Set(sources).count == 2, "\(sources)")
        #expect(sources.filter { $0 == "thumbs/\(common.key).jpg" }.count == 2, "\(sources)")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder + "/thumbs").sorted()
        #expect(files == Set(sources).map { String($0.dropFirst("thumbs/".count)) }.sorted(), "\(files)")
    }

    /// How many times each image object is drawn (`/ImN Do`) in the pages of the PDF at `path`
    /// (the PDF module writes page contents uncompressed).
    static func imageDraws(in path: String) throws -> [String: Int] {
        let text = String(decoding: try Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self)
        var draws: [String: Int] = [:]
        for match in text.matches(of: try Regex("/(Im[0-9]+) Do")) {
            guard let name = match.output[1].substring else { continue }
            draws[String(name), default: 0] += 1
        }
        return draws
    }

    /// An MP4 the image service stores as a movie: an ftyp box, then an mdat of filler.
    static func movie(_ count: Int = 10_000) -> [UInt8] {
        var data: [UInt8] = [0, 0, 0, 24] + Array("ftypisom".utf8) + [0, 0, 2, 0] + Array("isomiso2".utf8)
        let size = UInt32(count + 8)
        data += [UInt8(size >> 24), UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)] + Array("mdat".utf8)
        data += (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        return data
    }
}
