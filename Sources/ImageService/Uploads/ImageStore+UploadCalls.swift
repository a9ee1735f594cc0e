import Proto

/// BeginUpload, AppendUpload, CommitUpload and AbortUpload: the store's calls, answered by its
/// `Uploads` (which owns the open uploads), with the store's checks and insert of a new image.
extension ImageStore {
    /// Opens an upload of `totalSize` bytes for `peer` (counted against its share,
    /// `ImageStoreLimits.maxOpenUploads`); `checksum` ("sha256:<hex>", optional) is checked at commit.
    public func beginUpload(_ new: NewImage, totalSize: Int64, checksum: String, peer: [UInt8] = []) async throws -> UploadTicket {
        try await uploads.begin(new, totalSize: totalSize, checksum: checksum, peer: peer) { try await self.validate($0) }
    }

    /// Resumes the open upload `id` (after a restart of this service or of the client): the
    /// same id, the bytes durably received so far, and a fresh expiry.
    public func resumeUpload(_ id: String) async throws -> UploadTicket {
        try await uploads.resume(id)
    }

    /// Appends `data` at `offset`, which must equal the bytes received so far; returns the new total.
    public func appendUpload(_ id: String, offset: Int64, data: some BlobBytes) async throws -> Int64 {
        try await uploads.append(id, offset: offset, data: data)
    }

    /// Verifies size, checksum and media of a complete upload and stores it as an image.
    public func commitUpload(_ id: String, checksum: String) async throws -> ImageInfo {
        try await uploads.commit(id, checksum: checksum) { info, contentCheck in
            try await self.insert(info, contentCheck: contentCheck)
        }
    }

    /// Drops an upload and its staged bytes.
    public func abortUpload(_ id: String) async throws {
        try await uploads.abort(id)
    }

    /// Drops uploads idle past their expiry; returns how many.
    @discardableResult
    public func expireUploads() -> Int { uploads.expire() }

    /// Uploads in progress.
    public var openUploads: Int { uploads.count }
}
