import Dispatch
import Foundation
import Locking
import Runtime
import SQLite

/// Where the image store's work runs, shared by the store and its pieces (`Uploads`,
/// `Thumbnails`): images.db on its owners' threads, blob file I/O on the disk threads.
///
/// `index…`: images.db (`indexWrite` on the writer, `indexRead` on the reader, `indexReadHere`
/// on the calling blocking thread). `onDisk`/`onLane`: blob file I/O on the disk threads or on
/// another `BlockingPool` (`onDisk` for writes, their errors told as a write's).
struct StoreWork: Sendable {
    /// The writer connection: opens, migrates and reconciles images.db when it starts; rows
    /// that arrive while a commit runs share the next one (group commit). It also owns the
    /// `thumbnails` job queue, which `JobQueueService` serves through it.
    let writer: DatabaseOwner<ImageIndex>
    /// A second connection for lookups and lists (and the `thumbnails` queue's reads), so reads
    /// never queue behind a commit's fsync.
    let reader: DatabaseOwner<ImageIndex>
    /// Blob file I/O, which blocks: its own threads, so a put waiting for its fsync holds none
    /// of the shared pool's (one per core).
    let disk = BlockingPool(name: "images-io", count: 16)
    /// Digests computed while a disk thread writes (`BlockingPool.alongside`); they never wait
    /// on anything, so no cycle can form with the writes waiting for them.
    let digests = BlockingPool(name: "images-digest", count: 4)

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

    /// `body`, a write, on a disk thread, or on a thread of `pool` once one is free; a full
    /// disk and an I/O error are told as what they mean for the write. Reads go through
    /// `readVerified`, whose `readError` tells theirs.
    func onDisk<T: Sendable>(in pool: BlockingPool? = nil, _ body: @escaping @Sendable () throws -> T) async throws -> T {
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

    /// `body` on a disk thread, or on a thread of `pool` once one is free; its errors as they
    /// are. On the disk threads `body` runs even when the task is cancelled meanwhile (a delete's
    /// removal of its files after the commit must happen); on `pool` (renders) a task cancelled
    /// while it waits gets `CancellationError` and `body` never runs.
    func onLane<T: Sendable>(in pool: BlockingPool? = nil, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        if let pool { return try await pool.run(body) }
        return try await withVisibleCheckedThrowingContinuation { continuation in
            disk.submit({ continuation.resume(with: Result { try body() }) }, refused: { _ in
                continuation.resume(throwing: ImageStoreError.closed)
            })
        }
    }
}
