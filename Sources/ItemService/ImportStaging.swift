import Foundation
import Locking
import Proto
import RPC
import Runtime

/// The open imports of ImportService (transfer.proto, docs/protocol.md §19): what each has
/// staged, in memory only, until it commits, aborts or goes idle past its limit. A process that
/// stops forgets them; nothing of them was written.
final class ImportStaging: Sendable {
    /// The idle limit when BeginImport gives none, and the most it may give.
    static let defaultIdleSeconds: Int32 = 600
    static let maxIdleSeconds: Int32 = 3600
    /// The most imports open at once, and what one may stage.
    static let maxOpen = 4
    static let maxItems = 100_000
    static let maxOthers = 200_000

    private struct Open {
        var staged = StagedImport()
        var idleMilliseconds: Int64
        var expiresAt: Int64
    }

    private let open = Locked<[String: Open]>([:])
    let clock: any WallClock

    init(clock: any WallClock) {
        self.clock = clock
    }

    func begin(_ request: BeginImportRequest) throws(RPCError) -> BeginImportResponse {
        guard (0...Self.maxIdleSeconds).contains(request.idleSeconds) else {
            throw .invalidArgument("idle_seconds must be 0…\(Self.maxIdleSeconds) (got \(request.idleSeconds))")
        }
        let now = clock.nowMilliseconds()
        let idle = Int64(request.idleSeconds == 0 ? Self.defaultIdleSeconds : request.idleSeconds) * 1000
        let id = UUID().uuidString.lowercased()
        var response = BeginImportResponse()
        response.importId = id
        response.expiresAtMs = now + idle
        let opened = open.withLock { open in
            open = open.filter { $0.value.expiresAt > now }
            guard open.count < Self.maxOpen else { return false }
            var entry = Open(idleMilliseconds: idle, expiresAt: now + idle)
            entry.staged.sourceHead = request.sourceHead
            open[id] = entry
            return true
        }
        guard opened else {
            throw .resourceExhausted("\(Self.maxOpen) imports are open already; commit or abort one (or wait until one goes idle)")
        }
        return response
    }

    func add(_ request: AddImportRequest) throws -> AddImportResponse {
        // Checked before the lock: the photos first, which the items name.
        var photos: [String: String] = [:]
        for (index, photo) in request.photos.enumerated() {
            let key = try ItemInput.key(photo.imageKey, field: "photos[\(index)].image_key")
            guard photo.checksum.hasPrefix("sha256:"), photo.checksum.count == 71,
                photo.checksum.dropFirst(7).allSatisfy({ $0.isHexDigit && !$0.isUppercase })
            else {
                throw RPCError.invalidArgument(
                    "photos[\(index)].checksum must be sha256: and 64 lower-case hex digits (got \(ItemInput.quoted(photo.checksum)))")
            }
            photos[key] = photo.checksum
        }
        for (index, location) in request.locations.enumerated() {
            _ = try ItemInput.key(location.key, field: "locations[\(index)].key")
        }
        for (index, category) in request.categories.enumerated() {
            _ = try ItemInput.key(category.key, field: "categories[\(index)].key")
        }
        let now = clock.nowMilliseconds()
        return try open.withLock { open throws -> AddImportResponse in
            guard var entry = open[request.importId], entry.expiresAt > now else {
                open[request.importId] = nil
                throw RPCError.notFound("no open import \(request.importId); begin a new one")
            }
            let known = entry.staged.photos.merging(photos) { _, new in new }
            for (index, item) in request.items.enumerated() {
                try ItemStore.checkStaged(item, index: index, photos: known)
            }
            guard entry.staged.items.count + request.items.count <= Self.maxItems,
                entry.staged.locations.count + request.locations.count <= Self.maxOthers,
                entry.staged.categories.count + request.categories.count <= Self.maxOthers,
                known.count <= Self.maxOthers
            else {
                throw RPCError.resourceExhausted(
                    "an import stages at most \(Self.maxItems) items and \(Self.maxOthers) locations, categories or photos; import in parts")
            }
            entry.staged.photos = known
            entry.staged.locations += request.locations
            entry.staged.categories += request.categories
            entry.staged.items += request.items
            entry.expiresAt = now + entry.idleMilliseconds
            open[request.importId] = entry
            var response = AddImportResponse()
            response.locations = Int64(entry.staged.locations.count)
            response.categories = Int64(entry.staged.categories.count)
            response.items = Int64(entry.staged.items.count)
            response.photos = Int64(entry.staged.photos.count)
            return response
        }
    }

    /// What the import has staged (renewing it), or NOT_FOUND.
    func staged(_ id: String) throws(RPCError) -> StagedImport {
        let now = clock.nowMilliseconds()
        let staged = open.withLock { open -> StagedImport? in
            guard var entry = open[id], entry.expiresAt > now else {
                open[id] = nil
                return nil
            }
            entry.expiresAt = now + entry.idleMilliseconds
            open[id] = entry
            return entry.staged
        }
        guard let staged else { throw .notFound("no open import \(id); begin a new one") }
        return staged
    }

    /// Ends the import; false when it was not open.
    @discardableResult
    func end(_ id: String) -> Bool {
        open.withLock { $0.removeValue(forKey: id) != nil }
    }
}
