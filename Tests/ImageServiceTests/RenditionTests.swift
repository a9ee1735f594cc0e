import Digest
import Foundation
import JPEG
import Proto
import Testing
@testable import ImageService

@Suite struct RenditionTests {
    @Test(arguments: 1...8)
    func fitAppliesEXIFOrientationForEveryValue(orientation: Int) async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder)
        let landscape = try await store.put(try Samples.photo("Landscape_\(orientation).jpg"), NewImage()).info
        let portrait = try await store.put(try Samples.photo("Portrait_\(orientation).jpg"), NewImage()).info
        let wide = try await store.rendition(landscape.key, width: 120, height: 120, mode: .fit)
        let tall = try await store.rendition(portrait.key, width: 120, height: 120, mode: .fit)
        let wideImage = try JPEG.decode(wide.data)
        let tallImage = try JPEG.decode(tall.data)
        #expect(wideImage.width == 120 && wideImage.height < 120, "landscape \(orientation): \(wideImage.width)×\(wideImage.height)")
        #expect(tallImage.height == 120 && tallImage.width < 120, "portrait \(orientation): \(tallImage.width)×\(tallImage.height)")
        #expect(wide.info.width == Int32(wideImage.width) && wide.info.height == Int32(wideImage.height))
        #expect(wide.info.checksum == SHA256.checksum(wide.data) && wide.info.orientation == 1)
    }

    @Test func fitIsExactlyTheSizeItsInfoReportsWhenTheScaledDecodeRoundsItsEdges() async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder)
        // 300×225 decodes at 1/4 as 75×57 (edges rounded up), 151×269 at 1/2 as 76×135: a fit of
        // those would be 63×48 and 56×99, not the 64×48 and 56×100 of the originals' aspect.
        for (width, height, box, expected) in [(300, 225, 64, (64, 48)), (151, 269, 100, (56, 100))] {
            let info = try await store.put(try Samples.jpeg(width: width, height: height), NewImage()).info
            let rendition = try await store.rendition(info.key, width: box, height: box, mode: .fit)
            let image = try JPEG.decode(rendition.data)
            #expect(rendition.info.width == Int32(expected.0) && rendition.info.height == Int32(expected.1), "\(width)×\(height)")
            #expect(image.width == expected.0 && image.height == expected.1, "\(width)×\(height): \(image.width)×\(image.height)")
        }
    }

    @Test func fillCoversTheBoxAndRenditionsAreCached() async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder)
        let photo = try await store.put(try Samples.photo("Landscape_1.jpg"), NewImage()).info
        let filled = try await store.rendition(photo.key, width: 50, height: 80, mode: .fill)
        let image = try JPEG.decode(filled.data)
        #expect(image.width == 50 && image.height == 80)
        let hitsBefore = store.cache.statistics.hits
        let again = try await store.rendition(photo.key, width: 50, height: 80, mode: .fill)
        #expect(again.data == filled.data)
        #expect(store.cache.statistics.hits > hitsBefore)
    }

    @Test func aRenditionIsTheThumbnailersBytesForItsSize() async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder)
        let data = try Samples.photo("Portrait_6.jpg")
        let photo = try await store.put(data, NewImage()).info
        for (box, mode, target) in [
            (256, RenditionMode.fit, Thumbnailer.Target(longestEdge: 256)),
            (64, .fill, Thumbnailer.Target(longestEdge: 64, fit: .fill)),
        ] {
            let rendition = try await store.rendition(photo.key, width: box, height: box, mode: mode)
            let thumbnail = try Thumbnailer().thumbnails(of: data, sizes: [target])[0]
            #expect(rendition.data == thumbnail.data, "\(box) \(mode)")
            #expect(rendition.info.width == Int32(thumbnail.width) && rendition.info.height == Int32(thumbnail.height))
        }
    }

    @Test func storedThumbnailThatFitsIsServed() async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder)
        let original = try await store.put(try Samples.jpeg(width: 400, height: 200), NewImage()).info
        let thumbBytes = try Samples.jpeg(width: 100, height: 50)
        let thumb = try await store.put(thumbBytes, NewImage(kind: .thumbnail, parentKey: original.key)).info
        let served = try await store.rendition(original.key, width: 100, height: 100, mode: .fit)
        #expect(served.info == thumb && served.data == thumbBytes)
        let rendered = try await store.rendition(original.key, width: 60, height: 60, mode: .fit)
        #expect(rendered.info.width == 60 && rendered.info.height == 30 && rendered.info.key == original.key)
        // FIT never enlarges.
        let big = try await store.rendition(original.key, width: 4000, height: 4000, mode: .fit)
        #expect(big.info.width == 400 && big.info.height == 200)
    }

    @Test func renditionRefusesBadSizesAndMovies() async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder)
        let movie = try await store.put(Samples.mp4(), NewImage()).info
        #expect(await storeError { try await store.rendition(movie.key, width: 10, height: 10, mode: .fit) }
            == .failedPrecondition(
                "image \(movie.key) is video/mp4, a movie whose poster has not been made yet: the thumbnail worker makes its thumbnails from its poster frame; EnqueueThumbnails with its key (homepwner thumbs batch \(movie.key)) and ask again once the job is done; a job that failed says why (JobQueue GetJob)"))
        #expect(await storeError { try await store.rendition(movie.key, width: 0, height: 10, mode: .fit) }
            == .invalid("width must be in 1...8192 (got 0)"))
        #expect(await storeError { try await store.rendition(movie.key, width: 10, height: 9000, mode: .fill) }
            == .invalid("height must be in 1...8192 (got 9000)"))
    }
}
