import Dispatch
import Foundation
import Locking
import SQLite

/// Where the image store's work runs, shared by the store and its pieces (`Uploads`,
/// `Thumbnails`): images.db on its owners' threads, blob file I/O on the I/O lanes.
///
/// `index…`: images.db (`indexWrite` on the writer, `indexRead` on the reader, `indexReadHere`
/// on the calling blocking thread). `onDisk`/`onLane`: blob file I/O on the I/O lanes or a lane
/// pool (`onDisk` for writes, their errors told as a write's).
struct StoreWork: Sendable {
    /// The writer connection: opens, migrates and reconciles images.db when it starts; rows
    /// that arrive while a commit runs share the next one (group commit). It also owns the
    /// `thumbnails` job queue, which `JobQueueService` serves through it.
    let writer: DatabaseOwner<ImageIndex>
    /// A second connection for lookups and lists (and the `thumbnails` queue's reads), so reads
    /// never queue behind a commit's fsync.
    let reader: DatabaseOwner<ImageIndex>
    /// File I/O, which blocks (see `Lanes`).
    let ioLanes = Lanes(label: "homepwner.images.io", count: 16)
    /// Digests computed while the I/O lane writes; they never wait on anything.
    let digestLanes = Lanes(label: "homepwner.images.digest", count: 4)

    /// Runs `body` with the writer connection on its thread.
    func indexWrite<T: Sendable>(_ body: @escaping @Sendable (ImageIndex) throws -> T) async throws -> T {
        try await writer.perform(body)
    }

    /// Runs `body` with the writer connection on its thread without waiting for it; `failure`
    /// gets its error.
    func indexWriteLater(
        _ body: @escaping @Sendable (ImageIndex) throws -> Void, failure: @escaping @Sendable (any Error) -> Void
    ) {
        writer.submit(body) { result in
            if case .failure(let error) = result { failure(error) }
        }
    }

    /// Runs a read-only lookup on the reader connection (sees every commit made before it starts).
    func indexRead<T: Sendable>(_ body: @escaping @Sendable (ImageIndex) throws -> T) async throws -> T {
        try await reader.perform(body)
    }

    /// The row of `key` from the reader connection, on the calling thread (an I/O lane, which
    /// may wait briefly for the reader's batch in progress): for a path that should wake no
    /// other thread.
    func indexReadHere(_ key: String) throws -> StoredImage? {
        try reader.performHere { try $0.stored(key) }
    }

    /// `body`, a write, on the next I/O lane, or on a lane of `pool` once one is free; a full
    /// disk and an I/O error are told as what they mean for the write. Reads go through
    /// `readVerified`, whose `readError` tells theirs.
    func onDisk<T: Sendable>(in pool: LanePool? = nil, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        do {
            return try await onLane(in: pool, body)
        } catch let error as BlobIOError where error.code == ENOSPC || error.code == EDQUOT {
            // A full disk is a limit the operator can act on, not a bug.
            throw DiskFull(reason: "the image store's disk: \(error)")
        } catch let error as BlobIOError where error.code == EIO {
            // Nothing refers to what failed to be written; the disk is the operator's to look at.
            throw ImageStoreError.unavailable("the image store's disk failed (\(error)); nothing was stored, retry later")
        }
    }

    /// `body` on the next I/O lane, or on a lane of `pool` once one is free; its errors as they are.
    func onLane<T: Sendable>(in pool: LanePool? = nil, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        if let pool { return try await pool.run(body) }
        return try await withVisibleCheckedThrowingContinuation { continuation in
            ioLanes.queue().async { continuation.resume(with: Result { try body() }) }
        }
    }
}
