import Proto

/// DeleteImagesForOwner and the owner check of puts and uploads (see `ImageIndex+Owners`).
extension ImageStore {
    /// The most `attached_keys` one DeleteImagesForOwner takes (an item holds at most 100 photos).
    public static let maxAttachedKeys = 1000

    /// Deletes every image of `ownerKey`, the `attachedKeys` images that are its or no one's
    /// (`ImageIndex.deletion(ofOwner:attached:)`), and what was made from either; none is not an error (it is the item delete's cascade). With
    /// `ownerDeleted`, later puts and uploads for the owner are refused.
    public func deleteForOwner(_ ownerKey: String, attachedKeys: [String] = [], ownerDeleted: Bool = false) async throws -> [ImageInfo] {
        guard !ownerKey.isEmpty else { throw ImageStoreError.invalid("owner_key must not be empty") }
        let ownerKey = Self.canonicalOwner(ownerKey)
        guard attachedKeys.count <= Self.maxAttachedKeys else {
            throw ImageStoreError.invalid("attached_keys holds \(attachedKeys.count) keys, over the limit of \(Self.maxAttachedKeys)")
        }
        var keys: [String] = []
        for (index, key) in attachedKeys.enumerated() {
            guard let canonical = Self.canonicalKey(key) else {
                throw ImageStoreError.invalid("attached_keys[\(index)] \"\(key)\" is not a UUID")
            }
            keys.append(canonical)
        }
        let now = clock.nowMilliseconds(), attached = keys
        // The record goes in the transaction that deletes the rows, under the same key claims
        // as every delete (a put of one of those keys waits for the unlink).
        var record: (@Sendable (ImageIndex) throws -> Void)?
        if ownerDeleted {
            record = { index in try index.recordDeletedOwner(ownerKey, now: now) }
        }
        return try await deleteClaimed(alongside: record) { index in try index.deletion(ofOwner: ownerKey, attached: attached) }
    }

    /// Refuses, before any byte is written, a new image for an owner deleted for good; the
    /// transaction that adds an image's row checks again (`ImageIndex.insert`), which is what
    /// makes it certain.
    func refuseDeletedOwner(_ ownerKey: String) async throws {
        guard !ownerKey.isEmpty else { return }
        let ownerKey = Self.canonicalOwner(ownerKey)
        try await indexRead { try $0.refuseDeletedOwner(ownerKey) }
    }
}
