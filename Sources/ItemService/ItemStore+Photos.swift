import Proto
import SQLite

extension ItemStore {
    /// Attaches an image to an item (the first attached photo becomes primary); attaching one
    /// already attached changes nothing unless it asks to become primary.
    public func attachPhoto(_ request: AttachPhotoRequest, now: Int64) throws -> Item {
        let itemKey = try ItemInput.key(request.itemKey, field: "item_key")
        let imageKey = try ItemInput.key(request.imageKey, field: "image_key")
        return try changePhotos(itemKey: itemKey, now: now) { item in
            if !item.photoKeys.contains(imageKey) {
                guard item.photoKeys.count < ItemInput.maxPhotosPerItem else {
                    throw ItemStoreError.failedPrecondition(
                        "item \(itemKey) has \(item.photoKeys.count) photos already, the most an item holds; detach one first")
                }
                item.photoKeys.append(imageKey)
            }
            if request.makePrimary || item.primaryPhotoKey.isEmpty { item.primaryPhotoKey = imageKey }
        }
    }

    /// Detaches an image; a detached primary is replaced by the first photo left.
    public func detachPhoto(_ request: DetachPhotoRequest, now: Int64) throws -> Item {
        let itemKey = try ItemInput.key(request.itemKey, field: "item_key")
        let imageKey = try ItemInput.key(request.imageKey, field: "image_key")
        return try changePhotos(itemKey: itemKey, now: now) { item in
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
        return try changePhotos(itemKey: itemKey, now: now) { item in
            guard item.photoKeys.contains(imageKey) else {
                throw ItemStoreError.failedPrecondition(
                    "image \(imageKey) is not attached to item \(itemKey); attach it before making it primary")
            }
            item.primaryPhotoKey = imageKey
        }
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

    /// Reads the item, applies `change` and stores it with a new version when anything changed.
    private func changePhotos(itemKey: String, now: Int64, _ change: (inout Item) throws -> Void) throws -> Item {
        try write {
            let before = try existing(key: itemKey)
            var item = before
            try change(&item)
            guard item.photoKeys != before.photoKeys || item.primaryPhotoKey != before.primaryPhotoKey else { return before }
            try db.execute(
                "UPDATE items SET photo_keys = ?, primary_photo_key = ?, updated_at_ms = ?, version = version + 1 WHERE key = ?",
                [.text(item.photoKeys.joined(separator: " ")), .text(item.primaryPhotoKey), .integer(now), .text(itemKey)])
            item.version += 1
            item.updatedAtMs = now
            return item
        }
    }
}
