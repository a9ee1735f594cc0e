import Foundation
import JPEG
import Proto
import Testing
@testable import ImageService

@Suite struct RenditionLimitTests {
    @Test func renditionOfAnImageOverTheSourceLimitIsFailedPreconditionNamingBoth() async throws {
        let folder = try TemporaryFolder()
        let photo = try Samples.photo("Landscape_1.jpg")
        let store = try makeStore(folder, limits: ImageStoreLimits(maxRenditionSourceBytes: Int64(photo.count - 1)))
        let info = try await store.put(photo, NewImage()).info
        #expect(await storeError { try await store.rendition(info.key, width: 100, height: 100, mode: .fit) } == .failedPrecondition(
            "image \(info.key) is \(photo.count) bytes, over the \(photo.count - 1) bytes a rendition is made from (--max-rendition-source-bytes); fetch it with GetImage and scale it on the client"))
        // At the limit it renders.
        let other = try TemporaryFolder()
        let exact = try makeStore(other, limits: ImageStoreLimits(maxRenditionSourceBytes: Int64(photo.count)))
        let stored = try await exact.put(photo, NewImage()).info
        #expect(try await exact.rendition(stored.key, width: 100, height: 100, mode: .fit).info.width == 100)
    }

    @Test func theSourceLimitIsAFlagWithADefaultOf256MiB() throws {
        #expect(ImageStoreLimits().maxRenditionSourceBytes == 256 << 20)
        #expect(ImageServiceConfiguration().maxRenditionSourceBytes == 256 << 20)
        let option = try #require(ImageServiceConfiguration.options.first { $0.name == "max-rendition-source-bytes" })
        #expect(option.defaultValue == String(256 << 20) && option.env == "HOMEPWNER_IMAGE_MAX_RENDITION_SOURCE_BYTES")
    }
}
