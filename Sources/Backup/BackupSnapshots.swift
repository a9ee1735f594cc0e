import Foundation
import Locking
import Proto
import RPC
import Runtime
import SQLite

/// A service's side of an online backup (backup.proto, docs/protocol.md §18): open backups, each
/// with a consistent copy of the service's database made by `VACUUM INTO` on a connection of its
/// own (a read transaction: the service's writer is not blocked), read back in ranges, and
/// removed when the backup ends or goes idle past its limit. On the image service an open
/// backup also holds deletes back (`holdsDeletes`), so that what items.db lists, copied first,
/// is all in images.db, copied after it.
///
/// A `LifecycleService`: `start()` empties the staging folder (what a killed process left) and
/// starts the thread that copies and reads; `stop()` ends every backup and removes its files.
public final class BackupSnapshots: LifecycleService, Sendable {
    public var name: String { "backup-snapshots" }
    /// The most bytes one ReadSnapshot answers.
    public static let maxChunk: Int64 = 4 << 20
    /// The idle limit when BeginBackup gives none, and the most it may give.
    public static let defaultIdleSeconds: Int32 = 600
    public static let maxIdleSeconds: Int32 = 3600

    let service: String
    let databasePath: String
    let stagingFolder: String
    let holdsDeletes: Bool
    let clock: any WallClock
    private let io = BlockingPool(name: "backup", count: 1)
    private let open = Locked<[String: OpenBackup]>([:])

    private struct OpenBackup {
        var idleMilliseconds: Int64
        var expiresAt: Int64
        var snapshot: (path: String, info: DatabaseSnapshot)?
    }

    /// - Parameters:
    ///   - service: "item-service" or "image-service".
    ///   - databasePath: The database the backups copy.
    ///   - stagingFolder: Where the copies are kept until their backup ends (the service's own).
    ///   - holdsDeletes: Whether an open backup holds the service's deletes back.
    public init(service: String, databasePath: String, stagingFolder: String, holdsDeletes: Bool, clock: any WallClock = SystemClock()) {
        self.service = service
        self.databasePath = databasePath
        self.stagingFolder = stagingFolder
        self.holdsDeletes = holdsDeletes
        self.clock = clock
    }

    public func start() throws {
        try? FileManager.default.removeItem(atPath: stagingFolder)
        try FileManager.default.createDirectory(atPath: stagingFolder, withIntermediateDirectories: true)
        io.start()
    }

    public func stop() {
        io.stop()
        let files = open.withLock { open in
            defer { open.removeAll() }
            return open.values.compactMap { $0.snapshot?.path }
        }
        for file in files { try? FileManager.default.removeItem(atPath: file) }
    }

    /// Why a delete must wait now, or nil: an open backup that holds deletes.
    public func deleteRefusal() -> RPCError? {
        guard holdsDeletes else { return nil }
        let until = openBackups().map(\.expiresAt).max()
        guard let until else { return nil }
        let seconds = max(1, (until - clock.nowMilliseconds() + 999) / 1000)
        return .unavailable(
            "a backup is running, and deletes wait until it ends (at most \(seconds) s more); retry then (the item delete cascade retries by itself)")
    }

    /// Registers BeginBackup, SnapshotDatabase, ReadSnapshot and EndBackup on `server`.
    public func register(on server: RPCServer) {
        server.register(BackupServiceRPC.beginBackup) { [self] request, _ in try begin(request) }
        server.register(BackupServiceRPC.snapshotDatabase) { [self] request, _ in try await snapshot(request.backupId) }
        server.register(BackupServiceRPC.readSnapshot) { [self] request, _ in try await read(request) }
        server.register(BackupServiceRPC.endBackup) { [self] request, _ in
            var response = EndBackupResponse()
            response.ended = end(request.backupId)
            return response
        }
    }

    // MARK: The calls

    func begin(_ request: BeginBackupRequest) throws -> BeginBackupResponse {
        guard (0...Self.maxIdleSeconds).contains(request.idleSeconds) else {
            throw RPCError.invalidArgument(
                "idle_seconds must be 0…\(Self.maxIdleSeconds) (got \(request.idleSeconds)); 0 means \(Self.defaultIdleSeconds)")
        }
        let idle = Int64(request.idleSeconds == 0 ? Self.defaultIdleSeconds : request.idleSeconds) * 1000
        let id = UUID().uuidString.lowercased()
        let expiresAt = clock.nowMilliseconds() + idle
        _ = openBackups()
        open.withLock { $0[id] = OpenBackup(idleMilliseconds: idle, expiresAt: expiresAt) }
        var response = BeginBackupResponse()
        response.backupId = id
        response.service = service
        response.expiresAtMs = expiresAt
        response.holdsDeletes = holdsDeletes
        return response
    }

    func snapshot(_ id: String) async throws -> DatabaseSnapshot {
        try renew(id)
        let path = stagingFolder + "/" + id + ".db"
        let source = databasePath, now = clock.nowMilliseconds()
        let info = try await io.run { () throws -> DatabaseSnapshot in
            try? FileManager.default.removeItem(atPath: path)
            let db = try Database(path: source, mode: .readOnly)
            defer { try? db.close() }
            try db.setBusyTimeout(milliseconds: 5000)
            let version = try db.userVersion
            try db.execute("VACUUM INTO ?", [.text(path)])
            let size = (try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value ?? 0
            var info = DatabaseSnapshot()
            info.name = (source as NSString).lastPathComponent
            info.sizeBytes = size
            info.schemaVersion = Int32(clamping: version)
            info.takenAtMs = now
            return info
        }
        let kept = open.withLock { open -> Bool in
            guard open[id] != nil else { return false }
            if let old = open[id]?.snapshot?.path, old != path { try? FileManager.default.removeItem(atPath: old) }
            open[id]?.snapshot = (path, info)
            return true
        }
        guard kept else {
            try? FileManager.default.removeItem(atPath: path)
            throw Self.unknown(id)
        }
        return info
    }

    func read(_ request: ReadSnapshotRequest) async throws -> ReadSnapshotResponse {
        try renew(request.backupId)
        guard let snapshot = open.withLock({ $0[request.backupId]?.snapshot }) else {
            throw RPCError.failedPrecondition("backup \(request.backupId) has no snapshot yet; call SnapshotDatabase first")
        }
        guard request.offset >= 0, request.offset <= snapshot.info.sizeBytes else {
            throw RPCError.outOfRange("offset \(request.offset) is outside the snapshot (\(snapshot.info.sizeBytes) bytes)")
        }
        guard (0...Self.maxChunk).contains(request.length) else {
            throw RPCError.invalidArgument("length must be 0…\(Self.maxChunk) (got \(request.length)); 0 means \(Self.maxChunk)")
        }
        let length = min(request.length == 0 ? Self.maxChunk : request.length, snapshot.info.sizeBytes - request.offset)
        let data = try await io.run { () throws -> [UInt8] in
            guard let handle = FileHandle(forReadingAtPath: snapshot.path) else {
                throw RPCError.unavailable("the snapshot of backup \(request.backupId) is gone (the backup ended); begin another")
            }
            defer { try? handle.close() }
            try handle.seek(toOffset: UInt64(request.offset))
            return [UInt8](try handle.read(upToCount: Int(length)) ?? Data())
        }
        var response = ReadSnapshotResponse()
        response.data = data
        return response
    }

    /// Ends a backup, removing its snapshot; false when it was not open.
    func end(_ id: String) -> Bool {
        guard let ended = open.withLock({ $0.removeValue(forKey: id) }) else { return false }
        if let path = ended.snapshot?.path { try? FileManager.default.removeItem(atPath: path) }
        return true
    }

    // MARK: Helpers

    /// The backups still open, after ending those past their idle limit.
    private func openBackups() -> [(id: String, expiresAt: Int64)] {
        let now = clock.nowMilliseconds()
        let expired = open.withLock { open -> [String] in
            let gone = open.filter { $0.value.expiresAt <= now }
            for id in gone.keys { open.removeValue(forKey: id) }
            return gone.values.compactMap { $0.snapshot?.path }
        }
        for path in expired { try? FileManager.default.removeItem(atPath: path) }
        return open.withLock { $0.map { ($0.key, $0.value.expiresAt) } }
    }

    /// Pushes the backup's end out by its idle limit, or throws NOT_FOUND.
    private func renew(_ id: String) throws {
        _ = openBackups()
        let now = clock.nowMilliseconds()
        let found = open.withLock { open -> Bool in
            guard var backup = open[id] else { return false }
            backup.expiresAt = now + backup.idleMilliseconds
            open[id] = backup
            return true
        }
        guard found else { throw Self.unknown(id) }
    }

    private static func unknown(_ id: String) -> RPCError {
        .notFound("no open backup \(id): it ended, went idle past its limit, or the service restarted; begin another")
    }
}
