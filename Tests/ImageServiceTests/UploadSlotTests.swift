import Foundation
import Proto
import RPC
import Testing
@testable import ImageService
import RPCTestSupport

/// The open-upload slots are counted per client (its CURVE key, else its connection), as the
/// RPC server's per-peer limits are: one client holding all of its own leaves the others theirs.
@Suite struct UploadSlotTests {
    @Test func aClientWithEveryUploadItMayOpenLeavesAnotherClientItsBeginUpload() async throws {
        let folder = try TemporaryFolder()
        let host = try ImageServiceHostTests.start(folder)
        defer { host.stop() }
        let hog = try ImageServiceHostTests.client(folder)
        defer { hog.close() }
        let other = try ImageServiceHostTests.client(folder)
        defer { other.close() }
        var begin = BeginUploadRequest()
        begin.totalSize = 1000
        let perClient = ImageStoreLimits().maxOpenUploads
        #expect(perClient == 256)
        for _ in 0..<perClient { _ = try await hog.call(ImageServiceRPC.beginUpload, begin) }

        let refused = await rpcError { try await hog.call(ImageServiceRPC.beginUpload, begin) }
        #expect(refused?.code == .resourceExhausted, "\(String(describing: refused))")
        #expect(refused?.message.contains("this client has 256 uploads open") == true, "\(String(describing: refused))")
        let ticket = try await other.call(ImageServiceRPC.beginUpload, begin)
        #expect(!ticket.uploadId.isEmpty)

        // The other client's upload ending frees nothing of the hog's share.
        var abort = AbortUploadRequest()
        abort.uploadId = ticket.uploadId
        _ = try await other.call(ImageServiceRPC.abortUpload, abort)
        let refusedAgain = await rpcError { try await hog.call(ImageServiceRPC.beginUpload, begin) }
        #expect(refusedAgain?.code == .resourceExhausted)
    }
}
