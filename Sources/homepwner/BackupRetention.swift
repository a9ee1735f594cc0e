import Foundation

/// `--keep-daily N --keep-weekly N`: which snapshots of a backup folder stay, and the blobs no
/// remaining snapshot lists removed (docs/protocol.md §18, Retention).
///
/// Like restic's `forget`: walking from the newest, the newest snapshot of each of the last N
/// days that have one is kept, and so is the newest of each of the last N ISO weeks that have
/// one. The newest snapshot is always kept, and so is any folder whose name is not a snapshot
/// time (nothing is removed that this code did not name).
struct BackupRetention {
    var daily: Int
    var weekly: Int

    /// The snapshots of `names` (snapshot folder names) to keep.
    func keep(_ names: [String]) -> Set<String> {
        var kept = Set<String>()
        var days = Set<String>()
        var weeks = Set<String>()
        let dated = names.compactMap { name in BackupLayout.snapshotDate(name).map { (name, $0) } }
        kept.formUnion(names.filter { BackupLayout.snapshotDate($0) == nil })
        for (index, (name, date)) in dated.sorted(by: { $0.0 > $1.0 }).enumerated() {
            if index == 0 { kept.insert(name) }
            let day = String(name.prefix(8))
            if days.count < daily, days.insert(day).inserted { kept.insert(name) }
            let week = Self.isoWeek(date)
            if weeks.count < weekly, weeks.insert(week).inserted { kept.insert(name) }
        }
        return kept
    }

    /// "2026-W49": the ISO 8601 week (weeks start on Monday; week 1 holds the year's first Thursday).
    static func isoWeek(_ date: Date) -> String {
        var calendar = Calendar(identifier: .iso8601)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.yearForWeekOfYear, .weekOfYear], from: date)
        return String(format: "%04d-W%02d", parts.yearForWeekOfYear ?? 0, parts.weekOfYear ?? 0)
    }

    /// What a prune removed (or, dry, would remove).
    struct Pruned {
        var kept: [String] = []
        var removed: [String] = []
        var blobsRemoved = 0
        var bytesFreed: Int64 = 0
        var partialsRemoved = 0

        var line: String {
            "kept \(kept.count) snapshots, removed \(removed.count)"
                + (removed.isEmpty ? "" : " (\(removed.joined(separator: ", ")))")
                + "; \(blobsRemoved) blobs no kept snapshot lists removed (\(ImageCommand.byteCount(bytesFreed)))"
                + (partialsRemoved == 0 ? "" : "; \(partialsRemoved) leftovers of interrupted backups removed")
        }

        var json: String {
            "{\"kept\": [" + kept.map(jsonString).joined(separator: ", ") + "], \"removed\": ["
                + removed.map(jsonString).joined(separator: ", ") + "], \"blobs_removed\": \(blobsRemoved), "
                + "\"bytes_freed\": \(bytesFreed), \"partials_removed\": \(partialsRemoved)}"
        }
    }

    /// Removes the snapshots this retention does not keep, then every blob no kept snapshot's
    /// manifest lists and the leftovers of interrupted backups. The caller holds the folder's
    /// lock, so no backup is writing into it. A kept manifest that cannot be read stops the
    /// blob sweep before anything is removed: its blobs are unknown.
    func prune(folder: String, dryRun: Bool) throws -> Pruned {
        let manager = FileManager.default
        let snapshotsFolder = BackupLayout.snapshots(folder)
        let entries = ((try? manager.contentsOfDirectory(atPath: snapshotsFolder)) ?? []).sorted()
        let partials = entries.filter { $0.hasSuffix(".partial") }
        let names = entries.filter { !$0.hasSuffix(".partial") }
        let kept = keep(names)
        var pruned = Pruned()
        pruned.kept = names.filter { kept.contains($0) }
        pruned.removed = names.filter { !kept.contains($0) }
        var listed = Set<String>()
        for name in pruned.kept {
            let manifest = snapshotsFolder + "/" + name + "/" + BackupLayout.manifestName
            do {
                for blob in try BackupManifest.read(manifest).blobs { listed.insert(blob.path) }
            } catch {
                throw BackupError("\(error); no snapshot or blob was removed (fix or remove \(snapshotsFolder)/\(name) first)")
            }
        }
        // Blobs first would leave a snapshot listing removed blobs if interrupted; snapshots
        // first leaves only unlisted blobs, which the next prune removes.
        if !dryRun {
            for name in pruned.removed + partials { try manager.removeItem(atPath: snapshotsFolder + "/" + name) }
        }
        pruned.partialsRemoved = partials.count
        let blobsFolder = folder + "/blobs/sha256"
        for fan in ((try? manager.contentsOfDirectory(atPath: blobsFolder)) ?? []).sorted() {
            for file in ((try? manager.contentsOfDirectory(atPath: blobsFolder + "/" + fan)) ?? []).sorted() {
                let path = blobsFolder + "/" + fan + "/" + file
                guard !listed.contains(BackupLayout.relative(path, to: folder)) else { continue }
                let size = (try? manager.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value ?? 0
                if file.contains(".partial") {
                    pruned.partialsRemoved += 1
                } else {
                    pruned.blobsRemoved += 1
                    pruned.bytesFreed += size
                }
                if !dryRun { try manager.removeItem(atPath: path) }
            }
        }
        return pruned
    }
}

/// One backup or prune at a time in a folder: an exclusive flock(2) on `DIR/lock`, held until
/// the process exits (a killed one lets go by itself).
enum BackupLock {
    static func acquire(_ folder: String) throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let path = folder + "/lock"
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw BackupError("cannot open \(path): \(String(cString: strerror(errno)))") }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let why = errno == EWOULDBLOCK ? "another 'homepwner backup' or 'backup prune' is using \(folder); wait for it to end"
                : String(cString: strerror(errno))
            close(fd)
            throw BackupError(why)
        }
        // Deliberately not closed: the lock lasts as long as the process.
    }
}
