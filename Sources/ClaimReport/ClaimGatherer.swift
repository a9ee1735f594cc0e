import Foundation
import Proto
import RPC

/// Gathers a claim report's data as it is written, so memory stays flat whatever the number of
/// items: the overview first (the policy, the valuation and readiness, the sections), then
/// each section's items one ListItems page at a time (`exclude_sublocations`, by name, valued
/// as of the report's date), and each item's photos as the item is written.
///
/// Nothing here keeps an item past the call that handed it out: `figures` counts what was
/// fetched and how much was held at once, which the tests assert on.
public final class ClaimGatherer {
    /// What the gatherer has fetched and held so far.
    public struct Figures: Sendable, Hashable {
        /// ListItems pages fetched for sections (the photo count's pre-pass not included).
        public var pagesFetched = 0
        /// The most items one page held.
        public var largestPage = 0
        /// The most pages handed out and not yet given back at one time (1 when written as it goes).
        public var mostPagesHeld = 0
        /// Items handed out in all.
        public var itemsHandedOut = 0
        /// Photos looked up (GetRendition, StatImage or both).
        public var photosLookedUp = 0
        /// Thumbnails fetched (GetRendition).
        public var thumbnailsFetched = 0
        /// StatImage calls made for photos: every photo of a report without thumbnails (CSV);
        /// with them, only a photo that has no rendition (a document, a movie, a damaged JPEG),
        /// or any from an image service whose GetRendition predates `source`.
        public var statCalls = 0
        /// GetRendition calls made for photos (one per photo of a report with thumbnails).
        public var renditionCalls = 0
    }

    /// The image-service calls one photo's lookup made, for `Figures`.
    struct Calls: Sendable, Hashable {
        /// StatImage calls.
        var stat = 0
        /// GetRendition calls.
        var rendition = 0
    }

    /// The services asked.
    public let services: ClaimServices
    /// Items per ListItems page (500 by default; at most 1000).
    public let pageSize: Int32
    /// The box thumbnails are asked for in: a size the thumbnail worker stores by default
    /// (`--thumbnail-sizes` 64,256,1024), so GetRendition answers the stored one.
    public let thumbnailEdge: Int32
    /// Photo lookups in flight at once: one per item, for this many items ahead of the one
    /// being written.
    public let photoConcurrency: Int
    /// The defaults: a stored thumbnail's size, and lookups in flight.
    public static let defaultThumbnailEdge: Int32 = 256
    public static let defaultPhotoConcurrency = 8
    /// What was fetched and held so far.
    public private(set) var figures = Figures()
    private var pagesHeld = 0

    /// A gatherer over `services`.
    public init(
        services: ClaimServices, pageSize: Int32 = 500, thumbnailEdge: Int32 = defaultThumbnailEdge,
        photoConcurrency: Int = defaultPhotoConcurrency
    ) {
        precondition((1...1000).contains(pageSize), "ListItems pages hold 1…1000 items (got \(pageSize))")
        self.services = services
        self.pageSize = pageSize
        self.thumbnailEdge = thumbnailEdge
        self.photoConcurrency = max(1, photoConcurrency)
    }

    // MARK: Overview

    /// What the report needs before its first item, for `location`'s subtree (nil: everything)
    /// valued on `asOf` ("today" or YYYY-MM-DD).
    ///
    /// - Parameter needsImages: Whether the report reads photos; the image service is then
    ///   checked here, before anything is written, when there are any.
    /// - Throws: `ClaimReportError.emptySelection` when the scope holds no item; the
    ///   services' `RPCError`s (an as-of date that is not one: INVALID_ARGUMENT).
    public func overview(
        location: Location?, asOf: String, overrides: ClaimCoverOverrides = ClaimCoverOverrides(), needsImages: Bool,
        madeAt: Date = Date()
    ) async throws -> ClaimOverview {
        let scope = location?.key ?? ""
        // First: every change the report can show was made by this entry or before it.
        let historyHead = try await services.historyHead()
        let policy = try await services.policy()
        let valuation = try await services.valuation(asOf: asOf, location: scope)
        let readiness = try await services.readiness(location: scope)
        let tree = try await services.locations(root: scope)
        var sections = tree.locations.filter { $0.itemCount > 0 }.map { ClaimSection(key: $0.key, name: $0.path, itemCount: $0.itemCount) }
        if location == nil, tree.unplacedItemCount > 0 {
            sections.append(ClaimSection(key: "", name: ClaimSection.noLocationName, itemCount: tree.unplacedItemCount))
        }
        let itemCount = sections.reduce(0) { $0 + $1.itemCount }
        guard itemCount > 0 else { throw ClaimReportError.emptySelection(scope: location?.path) }
        var categoryNames: [String: String] = [:]
        for category in try await services.categories() { categoryNames[category.key] = category.name }
        let photoCount = try await countPhotos(scope: scope)
        if needsImages, photoCount > 0 { try await services.checkImageService() }
        return ClaimOverview(
            location: location, policy: policy, cover: ClaimCover(policy: policy, overrides: overrides), valuation: valuation,
            readiness: readiness, sections: sections, categoryNames: categoryNames, itemCount: itemCount, photoCount: photoCount,
            madeAt: madeAt, historyHead: historyHead)
    }

    /// Photos attached to the items of `scope`, counted a page at a time (the cover needs the
    /// count before the first item is written).
    private func countPhotos(scope: String) async throws -> Int64 {
        var request = ListItemsRequest()
        request.pageSize = 1000
        request.locationKey = scope
        request.sort = .created
        var count: Int64 = 0
        repeat {
            let page = try await services.items(request)
            count += page.items.reduce(0) { $0 + Int64($1.photos.count) }
            request.pageToken = page.nextPageToken
        } while !request.pageToken.isEmpty
        return count
    }

    // MARK: Items

    /// Hands `body` the items of `section`, one ListItems page at a time, by name, each valued
    /// as of `asOf`; the next page is fetched once `body` has returned.
    public func forEachPage(of section: ClaimSection, asOf: String, _ body: ([Item]) async throws -> Void) async throws {
        var request = ListItemsRequest()
        request.pageSize = pageSize
        request.sort = .name
        request.asOf = asOf
        if section.key.isEmpty {
            request.unplaced = true
        } else {
            request.locationKey = section.key
            request.excludeSublocations = true
        }
        repeat {
            let page = try await services.items(request)
            request.pageToken = page.nextPageToken
            figures.pagesFetched += 1
            figures.largestPage = max(figures.largestPage, page.items.count)
            figures.itemsHandedOut += page.items.count
            pagesHeld += 1
            figures.mostPagesHeld = max(figures.mostPagesHeld, pagesHeld)
            defer { pagesHeld -= 1 }
            try await body(page.items)
        } while !request.pageToken.isEmpty
    }

    /// Hands `body` each item of `section` with its photos (and their thumbnails when
    /// `thumbnails`), in order. The photos of the next `photoConcurrency` items are looked up
    /// while an item is written (one lookup in flight per item, so the services are asked as
    /// steadily as a plain fetch of every thumbnail asks them); at most that many items' photos
    /// are held.
    public func forEachItem(
        of section: ClaimSection, overview: ClaimOverview, thumbnails: Bool, _ body: (ClaimItem) async throws -> Void
    ) async throws {
        let services = services, edge = thumbnailEdge, window = photoConcurrency
        try await forEachPage(of: section, asOf: overview.asOf) { items in
            try await withThrowingTaskGroup(of: (Int, [ClaimPhoto], Calls).self) { group in
                var next = 0
                var ready: [Int: [ClaimPhoto]] = [:]
                func startNext() {
                    guard next < items.count else { return }
                    let index = next, item = items[index]
                    next += 1
                    group.addTask {
                        var photos: [ClaimPhoto] = []
                        var calls = Calls()
                        for photo in Self.attached(item) {
                            let (found, made) = try await Self.lookUp(photo, thumbnails: thumbnails, edge: edge, services: services)
                            photos.append(found)
                            calls.stat += made.stat
                            calls.rendition += made.rendition
                        }
                        return (index, photos, calls)
                    }
                }
                for _ in 0..<window { startNext() }
                for index in items.indices {
                    while ready[index] == nil, let (done, photos, calls) = try await group.next() {
                        ready[done] = photos
                        figures.statCalls += calls.stat
                        figures.renditionCalls += calls.rendition
                        startNext()
                    }
                    let photos = ready.removeValue(forKey: index) ?? []
                    figures.photosLookedUp += photos.count
                    figures.thumbnailsFetched += photos.filter { $0.thumbnail != nil }.count
                    let item = items[index]
                    try await body(ClaimItem(item: item, photos: photos, categoryName: overview.categoryNames[item.categoryKey] ?? ""))
                }
            }
        }
    }

    /// The item's photos with their roles (photo_keys alone for an item from before roles).
    private static func attached(_ item: Item) -> [ItemPhoto] {
        item.photos.isEmpty
            ? item.photoKeys.map { key -> ItemPhoto in
                var photo = ItemPhoto()
                photo.imageKey = key
                return photo
            } : item.photos
    }

    // MARK: Photos

    /// One photo in as few calls as it takes, with the calls it made. With `thumbnails`:
    /// GetRendition first, whose `source` is the photo's info (StatImage only when an older
    /// service leaves it out); a photo it cannot render (FAILED_PRECONDITION: a movie, a PDF
    /// document, another type, a JPEG that does not decode; DATA_LOSS: damaged on disk) is then
    /// asked about with StatImage and listed with the reason. Without: StatImage alone. A photo
    /// the service does not have (NOT_FOUND) is listed as missing.
    static func lookUp(
        _ photo: ItemPhoto, thumbnails: Bool, edge: Int32, services: ClaimServices
    ) async throws -> (photo: ClaimPhoto, calls: Calls) {
        var calls = Calls()
        func stat() async throws -> ImageInfo? {
            calls.stat += 1
            return try await services.stat(photo.imageKey)
        }
        guard thumbnails else {
            guard let info = try await stat() else { return (missing(photo), calls) }
            return (listed(photo, info: info, thumbnails: false, renditionError: ""), calls)
        }
        let rendition: GetRenditionResponse
        calls.rendition += 1
        do {
            rendition = try await services.thumbnail(photo.imageKey, edge: edge)
        } catch let error as RPCError where error.code == .notFound {
            return (missing(photo), calls)
        } catch let error as RPCError where error.code == .failedPrecondition || error.code == .dataLoss {
            // One photo the service cannot render (not a JPEG, damaged on disk) is listed with
            // the reason; the rest of the report goes on.
            guard let info = try await stat() else { return (missing(photo), calls) }
            return (listed(photo, info: info, thumbnails: true, renditionError: error.message), calls)
        }
        var source = rendition.source
        // An image service older than `source`: StatImage, as before it.
        if source == nil { source = try await stat() }
        guard let info = source else { return (missing(photo), calls) }
        let thumbnail = ClaimPhoto.Thumbnail(
            jpeg: rendition.data, width: Int(rendition.info?.width ?? 0), height: Int(rendition.info?.height ?? 0))
        return (ClaimPhoto(key: photo.imageKey, role: photo.role, info: info, thumbnail: thumbnail, unshown: nil), calls)
    }

    /// A photo the image service has no image for (deleted after it was attached: the item
    /// still holds its key).
    private static func missing(_ photo: ItemPhoto) -> ClaimPhoto {
        ClaimPhoto(
            key: photo.imageKey, role: photo.role, info: nil, thumbnail: nil,
            unshown: "the image service has no image \(photo.imageKey) (deleted after it was attached)")
    }

    /// A photo listed rather than shown: when a thumbnail was asked for, why there is none (what
    /// it is, or `renditionError`, what GetRendition said of a JPEG, PNG or HEIC it could not render).
    private static func listed(_ photo: ItemPhoto, info: ImageInfo, thumbnails: Bool, renditionError: String) -> ClaimPhoto {
        let why: String
        if info.mediaType == .document || info.contentType == "application/pdf" {
            why = "a PDF document"
        } else if info.mediaType == .movie {
            why = "a movie (\(info.contentType))"
        } else if !["image/jpeg", "image/png", "image/heic"].contains(info.contentType) {
            why = "\(info.contentType) has no thumbnail"
        } else {
            why = renditionError
        }
        return ClaimPhoto(key: photo.imageKey, role: photo.role, info: info, thumbnail: nil, unshown: thumbnails ? why : nil)
    }
}
