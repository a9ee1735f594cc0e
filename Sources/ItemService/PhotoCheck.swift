import Proto
import RPC

/// What AttachPhoto asks the image service before it attaches a photo: the image must exist,
/// and belong to the item or to no owner. An image of another owner would be deleted with that
/// owner and leave the item pointing at nothing; an unknown key would never be deleted by the
/// item's cascade, nor shown.
struct PhotoCheck: Sendable {
    /// The image service (the cascade's client), connected once the part has started.
    let connection: ClientConnection

    /// The image service's client.
    var client: RPCClient { connection.client }

    /// The longest StatImage call.
    static let maxWaitMilliseconds: Int64 = 5_000

    /// The image as the image service describes it (its checksum decides whether the item holds
    /// its content already). Throws NOT_FOUND for an image that does not exist,
    /// FAILED_PRECONDITION for one of another owner, and UNAVAILABLE when the image service does
    /// not answer within `budgetMilliseconds` (or answers anything else): a photo is never
    /// attached unchecked.
    func check(imageKey: String, itemKey: String, budgetMilliseconds: Int64) async throws(RPCError) -> ImageInfo {
        var request = StatImageRequest()
        request.key = imageKey
        let timeout = UInt32(clamping: min(Self.maxWaitMilliseconds, max(budgetMilliseconds, 1)))
        let info: ImageInfo
        do {
            // Three attempts ride out a reconnect (libzmq retries a lost connection within a
            // second), no more: the caller's client retries an UNAVAILABLE answer itself, and
            // two layers of retries would multiply into a wait past its deadline.
            info = try await client.call(
                ImageServiceRPC.statImage, request,
                options: CallOptions(timeoutMilliseconds: timeout, retry: RetryPolicy(maxAttempts: 3)))
        } catch {
            if error.code == .notFound {
                throw .notFound(
                    "image \(imageKey) does not exist in the image service; store it (PutImage with owner_key \(itemKey)) and attach the key it answers")
            }
            throw .unavailable(
                "the image service at \(client.endpoint) could not say whether image \(imageKey) exists (\(error)); the photo was not attached: retry")
        }
        guard info.ownerKey.isEmpty || info.ownerKey == itemKey else {
            throw .failedPrecondition(
                "image \(imageKey) belongs to owner \(info.ownerKey), not to item \(itemKey); attach only images stored with owner_key \(itemKey) (or with none)")
        }
        return info
    }
}
