import Foundation
import Proto
import RPC
import Testing
@testable import ImageService
import RPCTestSupport

/// GetRendition's `source`: the image the rendition was made from, as StatImage answers it, in
/// every reply (rendered, from the cache, a stored thumbnail), so a caller needs one call.
@Suite struct RenditionSourceTests {
    @Test func everyRenditionReplyCarriesItsSourceAsStatImageAnswersIt() async throws {
        let served = try ServedStore()
        defer { served.stop() }
        let client = served.client

        // Rendered (a cache miss), then the same size from the cache.
        let photo = try await RealWorldJPEGTests.put(client, try Samples.photo("Portrait_6.jpg"))
        let stat = try await Self.stat(client, photo.key)
        for attempt in ["rendered", "cached"] {
            let reply = try await RealWorldJPEGTests.rendition(client, photo.key, 120, 120)
            let source = try #require(reply.source, "\(attempt): the reply has no source")
            #expect(source == stat, "\(attempt): \(source) is not StatImage's \(stat)")
            #expect(source.key == photo.key && source.checksum == photo.checksum && source.checksum.hasPrefix("sha256:"), "\(attempt)")
            #expect(source.createdAtMs == photo.createdAtMs && source.createdAtMs > 0, "\(attempt)")
            #expect(source.mediaType == .image && source.contentType == "image/jpeg" && source.kind == .original, "\(attempt)")
            // The rendition's own info stays what it was: the thumbnail's size and checksum.
            #expect(reply.info?.kind == .thumbnail && reply.info?.checksum != source.checksum, "\(attempt)")
        }

        // A stored thumbnail of the size asked: its own info, and the original as the source.
        let original = try await RealWorldJPEGTests.put(client, try Samples.jpeg(width: 400, height: 200))
        var thumbnail = PutImageRequest()
        thumbnail.data = try Samples.jpeg(width: 100, height: 50)
        thumbnail.kind = .thumbnail
        thumbnail.parentKey = original.key
        let stored = try await client.call(ImageServiceRPC.putImage, thumbnail)
        let served100 = try await RealWorldJPEGTests.rendition(client, original.key, 100, 100)
        #expect(served100.info == stored, "the stored thumbnail is served")
        let originalStat = try await Self.stat(client, original.key)
        #expect(served100.source == originalStat)

        // An edited image is its renditions' source itself.
        var edit = PutImageRequest()
        edit.data = try Samples.jpeg(width: 300, height: 300)
        edit.kind = .edited
        edit.parentKey = original.key
        let edited = try await client.call(ImageServiceRPC.putImage, edit)
        let ofEdited = try await RealWorldJPEGTests.rendition(client, edited.key, 64, 64)
        let editedStat = try await Self.stat(client, edited.key)
        #expect(ofEdited.source == editedStat && editedStat.kind == .edited && editedStat.key != original.key)
    }

    /// StatImage of `key`.
    static func stat(_ client: RPCClient, _ key: String) async throws -> ImageInfo {
        var request = StatImageRequest()
        request.key = key
        return try await client.call(ImageServiceRPC.statImage, request)
    }
}
