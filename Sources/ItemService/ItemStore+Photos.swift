import Proto
import SQLite

extension ItemStore {
    /// Attaches an image to an item (the first attached photo becomes primary); attaching one
    /// already attached changes nothing unless it asks to become primary.
    ///
    /// An image whose content (`checksum`, its SHA-256) the item holds already under another
    /// key is not attached: that photo is this one (made primary, if asked). Decided in this
    /// transaction, so identical photos attached at the same moment are attached once.
    ///
    /// The store does not ask the image service whether the image exists, whom it belongs to and
    /// what its checksum is: its caller does, first (`photoToCheck`, then `ItemServiceHandlers`).
    public func attachPhoto(_ request: AttachPhotoRequest, checksum: String = "", now: Int64) throws -> Item {
        let itemKey = try ItemInput.key(request.itemKey, field: "item_key")
        let imageKey = try ItemInput.key(request.imageKey, field: "image_key")
        let role = try Self.role(request.role)
        return try write {
            var adding = false
            var changed: String?
            let item = try changePhotos(itemKey: itemKey, now: now, record: { changed = $0 }) { item in
                var photo = imageKey
                if !item.photoKeys.contains(imageKey) {
                    if let holder = try attachedPhoto(of: item, withChecksum: checksum) {
                        photo = holder
                    } else {
                        try checkAttachable(imageKey, to: item)
                        item.photoKeys.append(imageKey)
                        item.photos.append(Self.photo(imageKey, role))
                        adding = true
                    }
                }
                // A repeat attach changes the role only when it names one.
                if !adding && role != .photo, let index = item.photos.firstIndex(where: { $0.imageKey == photo }) {
                    item.photos[index].role = role
                }
                if request.makePrimary || item.primaryPhotoKey.isEmpty { item.primaryPhotoKey = photo }
            }
            if adding && !checksum.isEmpty {
                try db.execute(
                    "UPDATE item_photos SET checksum = ? WHERE image_key = ? AND item_id = (SELECT id FROM items WHERE key = ?)",
                    [.text(checksum), .text(imageKey), .text(itemKey)])
            }
            if adding {
                // Recorded after the checksum, with it: the SHA-256 the image service vouched for.
                try recordItem("photo.attached", key: itemKey, now: now, photo: imageKey, checksum: checksum)
            } else if let action = changed {
                try recordItem(action, key: itemKey, now: now, photo: imageKey)
            }
            return item
        }
    }

    /// The key of the item's photo whose content has `checksum`, if any ('' matches none).
    private func attachedPhoto(of item: Item, withChecksum checksum: String) throws -> String? {
        guard !checksum.isEmpty else { return nil }
        return try db.query(
            "SELECT image_key FROM item_photos WHERE checksum = ? AND item_id = (SELECT id FROM items WHERE key = ?) LIMIT 1",
            [.text(checksum), .text(item.key)]
        ).first?[0].stringValue
    }

    /// The keys of an AttachPhoto that the image service must vouch for before it runs, or nil
    /// when the photo is attached already (then nothing new is attached and there is nothing
    /// to ask). Throws what `attachPhoto` would refuse now: bad keys, an unknown item, a full
    /// item, a photo deleted with another item.
    public func photoToCheck(_ request: AttachPhotoRequest) throws -> (itemKey: String, imageKey: String)? {
        let itemKey = try ItemInput.key(request.itemKey, field: "item_key")
        let imageKey = try ItemInput.key(request.imageKey, field: "image_key")
        let item = try existing(key: itemKey)
        guard !item.photoKeys.contains(imageKey) else { return nil }
        try checkAttachable(imageKey, to: item)
        return (itemKey, imageKey)
    }

    /// Refuses a new photo for a full item, and a photo that the cascade of another item's
    /// delete is deleting (or has deleted).
    private func checkAttachable(_ imageKey: String, to item: Item) throws {
        guard item.photoKeys.count < ItemInput.maxPhotosPerItem else {
            throw ItemStoreError.failedPrecondition(
                "item \(item.key) has \(item.photoKeys.count) photos already, the most an item holds; detach one first")
        }
        if let row = try db.query(
            "SELECT item_key, deleted_at_ms FROM cascaded_photos WHERE image_key = ?", [.text(imageKey)]).first {
            throw ItemStoreError.failedPrecondition(
                "image \(imageKey) was a photo of item \(row[0].stringValue ?? "") only, which was deleted at \(row[1].int64Value ?? 0) ms, and is deleted with it; store the photo again and attach the new image")
        }
    }

    /// Detaches an image; a detached primary is replaced by the first photo left.
    public func detachPhoto(_ request: DetachPhotoRequest, now: Int64) throws -> Item {
        let itemKey = try ItemInput.key(request.itemKey, field: "item_key")
        let imageKey = try ItemInput.key(request.imageKey, field: "image_key")
        return try changePhotos(itemKey: itemKey, now: now, photo: imageKey) { item in
            guard let index = item.photoKeys.firstIndex(of: imageKey) else {
                throw ItemStoreError.notFound("image \(imageKey) is not attached to item \(itemKey)")
            }
            item.photoKeys.remove(at: index)
            if item.primaryPhotoKey == imageKey { item.primaryPhotoKey = item.photoKeys.first ?? "" }
        }
    }

    /// Makes an attached image the item's primary photo.
    public func setPrimaryPhoto(_ request: SetPrimaryPhotoRequest, now: Int64) throws -> Item {
        let itemKey = try ItemInput.key(request.itemKey, field: "item_key")
        let imageKey = try ItemInput.key(request.imageKey, field: "image_key")
        return try changePhotos(itemKey: itemKey, now: now, photo: imageKey) { item in
            guard item.photoKeys.contains(imageKey) else {
                throw ItemStoreError.failedPrecondition(
                    "image \(imageKey) is not attached to item \(itemKey); attach it before making it primary")
            }
            item.primaryPhotoKey = imageKey
        }
    }

    /// Says what an attached photo shows.
    public func setPhotoRole(_ request: SetPhotoRoleRequest, now: Int64) throws -> Item {
        let itemKey = try ItemInput.key(request.itemKey, field: "item_key")
        let imageKey = try ItemInput.key(request.imageKey, field: "image_key")
        let role = try Self.role(request.role)
        return try changePhotos(itemKey: itemKey, now: now, photo: imageKey) { item in
            guard let index = item.photos.firstIndex(where: { $0.imageKey == imageKey }) else {
                throw ItemStoreError.failedPrecondition(
                    "image \(imageKey) is not attached to item \(itemKey); attach it before giving it a role")
            }
            item.photos[index].role = role
        }
    }

    /// A role this build knows, or INVALID_ARGUMENT.
    static func role(_ role: PhotoRole) throws -> PhotoRole {
        guard (0...5).contains(role.rawValue) else {
            throw ItemStoreError.invalidArgument(
                "role must be one of PHOTO_ROLE_PHOTO, _SERIAL_PLATE, _RECEIPT, _MANUAL, _DAMAGE, _OTHER (0…5; got \(role.rawValue))")
        }
        return role
    }

    static func photo(_ key: String, _ role: PhotoRole) -> ItemPhoto {
        var photo = ItemPhoto()
        photo.imageKey = key
        photo.role = role
        return photo
    }

    /// Puts the attached images in a new order; `image_keys` must list each exactly once.
    public func reorderPhotos(_ request: ReorderPhotosRequest, now: Int64) throws -> Item {
        let itemKey = try ItemInput.key(request.itemKey, field: "item_key")
        var keys: [String] = []
        for (index, key) in request.imageKeys.enumerated() {
            keys.append(try ItemInput.key(key, field: "image_keys[\(index)]"))
        }
        return try changePhotos(itemKey: itemKey, now: now) { item in
            let given = Set(keys), attached = Set(item.photoKeys)
            if given.count != keys.count {
                let repeated = keys.first { key in keys.filter { $0 == key }.count > 1 }!
                throw ItemStoreError.invalidArgument("image_keys lists \(repeated) more than once")
            }
            if let extra = keys.first(where: { !attached.contains($0) }) {
                throw ItemStoreError.invalidArgument("image_keys lists \(extra), which is not attached to item \(itemKey)")
            }
            if let missing = item.photoKeys.first(where: { !given.contains($0) }) {
                throw ItemStoreError.invalidArgument(
                    "image_keys must list every attached image; \(missing) is missing (\(item.photoKeys.count) attached)")
            }
            item.photoKeys = keys
        }
    }

    /// Reads the item, applies `change` and stores it with a new version when anything changed,
    /// recording the change in the history (`photo`: the image it is about) or, given `record`,
    /// handing its action to the caller to record.
    private func changePhotos(
        itemKey: String, now: Int64, photo: String = "", record: ((String) -> Void)? = nil, _ change: (inout Item) throws -> Void
    ) throws -> Item {
        try write {
            let before = try existing(key: itemKey)
            var item = before
            try change(&item)
            // The roles follow their photos: a photo keeps its role through a reorder.
            let roles = Dictionary(item.photos.map { ($0.imageKey, $0.role) }, uniquingKeysWith: { first, _ in first })
            item.photos = item.photoKeys.map { Self.photo($0, roles[$0] ?? .photo) }
            guard item.photoKeys != before.photoKeys || item.primaryPhotoKey != before.primaryPhotoKey || item.photos != before.photos
            else { return before }
            let saved = try savePhotos(item, before: before, now: now)
            let action = Self.photoAction(before: before, after: item)
            if let record { record(action) } else { try recordItem(action, key: itemKey, now: now, photo: photo) }
            return saved
        }
    }

    /// Stores an item's photos and primary photo with a new version, and keeps `item_photos`
    /// (which items hold an image) in step; runs inside the caller's write.
    func savePhotos(_ item: Item, before: Item, now: Int64) throws -> Item {
        try db.execute(
            "UPDATE items SET photo_keys = ?, primary_photo_key = ?, photo_roles = ?, evidence = ?, updated_at_ms = ?, version = version + 1 WHERE key = ?",
            [
                .text(item.photoKeys.joined(separator: " ")), .text(item.primaryPhotoKey), .text(ClaimColumns.roles(item.photos)),
                .integer(ItemEvidence.of(item).rawValue), .integer(now), .text(item.key),
            ])
        let kept = Set(item.photoKeys), had = Set(before.photoKeys)
        for removed in had.subtracting(kept) {
            try db.execute(
                "DELETE FROM item_photos WHERE image_key = ? AND item_id = (SELECT id FROM items WHERE key = ?)",
                [.text(removed), .text(item.key)])
        }
        for added in kept.subtracting(had) {
            try db.execute(
                "INSERT OR IGNORE INTO item_photos (image_key, item_id) SELECT ?, id FROM items WHERE key = ?",
                [.text(added), .text(item.key)])
        }
        var saved = item
        saved.version = before.version + 1
        saved.updatedAtMs = now
        return saved
    }
}
