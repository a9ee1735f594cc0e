import Clients
import Proto
import RPC

/// The calls a claim report makes, to the item service and the image service, each with the
/// command's timeout. An image service that does not answer is said in words naming it, with
/// its status kept (UNAVAILABLE or DEADLINE_EXCEEDED), so the report stops with that.
public struct ClaimServices: Sendable {
    /// item-service: items, locations, categories, the policy, valuation, readiness.
    public let items: RPCClient
    /// image-service: photo metadata, thumbnails and originals.
    public let images: RPCClient
    /// Where the image service answers, for messages.
    public let imageEndpoint: String
    /// Each call's budget in milliseconds.
    public let timeoutMilliseconds: UInt32

    /// The services at the ends of `items` and `images`.
    public init(items: RPCClient, images: RPCClient, imageEndpoint: String, timeoutMilliseconds: UInt32) {
        self.items = items
        self.images = images
        self.imageEndpoint = imageEndpoint
        self.timeoutMilliseconds = timeoutMilliseconds
    }

    /// The services of `clients`, the image service named by `endpoints`.
    public init(clients: HomepwnerClients, endpoints: ServiceEndpoints, timeoutMilliseconds: UInt32) {
        self.init(items: clients.items, images: clients.images, imageEndpoint: endpoints.imageRPC, timeoutMilliseconds: timeoutMilliseconds)
    }

    var options: CallOptions { CallOptions(timeoutMilliseconds: timeoutMilliseconds) }

    // MARK: Item service

    func policy() async throws -> Policy {
        try await items.call(ItemServiceRPC.getPolicy, GetPolicyRequest(), options: options)
    }

    /// The history's head; nil from an item service that keeps none (UNIMPLEMENTED).
    func historyHead() async throws -> HistoryHead? {
        var request = GetHistoryRequest()
        request.pageSize = 1
        do {
            return try await items.call(HistoryServiceRPC.getHistory, request, options: options).head
        } catch {
            guard error.code == .unimplemented else { throw error }
            return nil
        }
    }

    func locations(root: String) async throws -> ListLocationsResponse {
        var request = ListLocationsRequest()
        request.rootKey = root
        return try await items.call(ItemServiceRPC.listLocations, request, options: options)
    }

    func categories() async throws -> [Category] {
        try await items.call(ItemServiceRPC.listCategories, ListCategoriesRequest(), options: options).categories
    }

    func valuation(asOf: String, location: String) async throws -> GetValuationResponse {
        var request = GetValuationRequest()
        request.asOf = asOf
        request.locationKey = location
        return try await items.call(ItemServiceRPC.getValuation, request, options: options)
    }

    func readiness(location: String) async throws -> GetReadinessResponse {
        var request = GetReadinessRequest()
        request.locationKey = location
        return try await items.call(ItemServiceRPC.getReadiness, request, options: options)
    }

    func items(_ request: ListItemsRequest) async throws -> ListItemsResponse {
        try await items.call(ItemServiceRPC.listItems, request, options: options)
    }

    // MARK: Image service

    /// Health/Check of the image service: a report with photos needs it from the first item on.
    func checkImageService() async throws {
        do {
            _ = try await images.call(HealthRPC.check, HealthCheckRequest(), options: options)
        } catch {
            throw imageServiceDown(error)
        }
    }

    /// The photo's metadata; nil when the image service has no such image (a photo deleted
    /// after it was attached: the item still shows its key).
    func stat(_ key: String) async throws -> ImageInfo? {
        var request = StatImageRequest()
        request.key = key
        do {
            return try await images.call(ImageServiceRPC.statImage, request, options: options)
        } catch where error.code == .notFound {
            return nil
        } catch {
            throw imageServiceDown(error)
        }
    }

    /// The photo's upright JPEG thumbnail fitting `edge` × `edge`: the stored thumbnail of that
    /// size when the thumbnail worker has made it, else rendered and cached by the service. The
    /// reply's `source` is the photo's own info, as StatImage answers it (nil from an image
    /// service older than that field).
    func thumbnail(_ key: String, edge: Int32) async throws -> GetRenditionResponse {
        var request = GetRenditionRequest()
        request.key = key
        request.width = edge
        request.height = edge
        request.mode = .fit
        do {
            // Renders queue behind one another (one per core): give them time.
            return try await images.call(
                ImageServiceRPC.getRendition, request, options: CallOptions(timeoutMilliseconds: max(timeoutMilliseconds, 30_000)))
        } catch {
            throw imageServiceDown(error)
        }
    }

    /// Bytes `[offset, offset + length)` of an image, where the reply's frame holds them.
    func range(of key: String, offset: Int64, length: Int64) async throws -> FrameBytes {
        var request = GetImageRequest()
        request.key = key
        request.offset = offset
        request.length = length
        do {
            let (reply, data) = try await images.call(
                ImageServiceRPC.getImage, request, largeBytesField: GetImageResponse.dataField,
                options: CallOptions(timeoutMilliseconds: max(timeoutMilliseconds, 60_000)))
            return data ?? FrameBytes(reply.data)
        } catch {
            throw imageServiceDown(error)
        }
    }

    /// `error` as it is, unless it says the image service is down or too slow: then in words
    /// naming it, with the same status.
    func imageServiceDown(_ error: RPCError) -> RPCError {
        guard error.code == .unavailable || error.code == .deadlineExceeded else { return error }
        return RPCError(
            error.code,
            "image-service at \(imageEndpoint) does not answer (\(error.message)); the report needs it for the photos: "
                + "start it ('ops/run' or 'homepwner up') and run the report again")
    }
}
