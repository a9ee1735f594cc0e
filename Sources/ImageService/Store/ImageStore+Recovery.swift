import Foundation
import Locking

/// What the store's start does before it serves: finish the puts whose rename was lost, remove
/// leftovers, quarantine blobs without a row, note rows without a blob.
extension ImageStore {
    /// What start-up found.
    struct RecoveryReport: Sendable {
        /// Puts whose row was committed while their rename had not reached the disk yet (see `indexPlaced`).
        var finishedPuts = 0
        /// Interrupted writes and uploads removed from `tmp/`.
        var leftovers = 0
        /// Blobs without an index row, moved to `quarantineFolder`.
        var quarantined = 0
        /// Where this start moved them ("" when there were none).
        var quarantineFolder = ""
        /// Images whose blob file is gone: kept, so reading them says DATA_LOSS instead of NOT_FOUND.
        var missingFiles: [String] = []
        /// Open uploads loaded back (their staging files checked), which `start()` opens again.
        var openUploads: [UploadRow] = []
        /// Uploads whose staging file held a chunk written but never acknowledged: cut back to their received bytes.
        var truncatedUploads = 0
        /// Uploads dropped: expired while the service was down, or their staging file is gone.
        var droppedUploads = 0
    }

    /// What this store's start found.
    var recovery: RecoveryReport { recoveryReport.report.withLock { $0 } }

    /// Where the writer's thread leaves what reconciling found.
    final class RecoveryRecord: Sendable {
        let report = Locked(RecoveryReport())
    }

    static func reconcile(index: ImageIndex, blobs: BlobStore, now: Int64) throws -> RecoveryReport {
        var report = RecoveryReport()
        report.finishedPuts = try finishInterruptedPuts(index: index, blobs: blobs)
        report.leftovers = blobs.removeTemporaryLeftovers()
        (report.openUploads, report.truncatedUploads, report.droppedUploads) = try recoverUploads(
            index: index, blobs: blobs, now: now)
        let indexed = try index.allKeys()
        let onDisk = Set(blobs.allKeys())
        // A file without a row is a put that crashed between rename and insert, a delete that
        // crashed between the row and the file (neither acknowledged), or a photo stored after
        // the copy of images.db in use was taken (an older copy restored). It is never visible,
        // and never deleted here: moved aside, where the operator can judge it.
        let orphans = onDisk.subtracting(indexed).sorted()
        if !orphans.isEmpty {
            let folder = try blobs.newQuarantineFolder(named: quarantineName(now))
            var sources = Set<String>()
            for key in orphans { sources.formUnion(try blobs.quarantine(key: key, into: folder)) }
            // The new entries first, then the removals from where the files were.
            try blobs.syncFolder(folder)
            for source in sources.sorted() { try blobs.syncFolder(source) }
            report.quarantined = orphans.count
            report.quarantineFolder = folder
        }
        report.missingFiles = indexed.subtracting(onDisk).sorted()
        return report
    }

    /// Removes the quarantine folders of starts longer ago than `limits.quarantineRetentionMilliseconds`,
    /// whole, and returns their names; a folder whose name is not a start's time (one an operator
    /// made) stays. Runs at each start and with the upload reaper.
    @discardableResult
    func pruneQuarantine() -> [String] {
        let retention = limits.quarantineRetentionMilliseconds
        guard retention != ImageStoreLimits.keepQuarantine,
              let names = try? FileManager.default.contentsOfDirectory(atPath: blobs.quarantineFolder)
        else { return [] }
        let now = clock.nowMilliseconds()
        var removed: [String] = []
        for name in names.sorted() {
            guard let started = Self.quarantineNameToMilliseconds(name), now - started > retention else { continue }
            do {
                try FileManager.default.removeItem(atPath: blobs.quarantineFolder + "/" + name)
                removed.append(name)
            } catch {
                logger.warning("quarantine folder not removed", ["folder": name, "error": "\(error)"])
            }
        }
        if !removed.isEmpty {
            logger.info("quarantine folders past their retention removed", ["folders": removed.joined(separator: ",")])
        }
        return removed
    }

    /// The start time a quarantine folder's name gives ("2026-11-29T17-37-12Z", or with "-2"… after
    /// it); nil for any other name.
    static func quarantineNameToMilliseconds(_ name: String) -> Int64? {
        let fields = name.split(separator: "-", omittingEmptySubsequences: false)
        // "YYYY-MM-DDTHH-MM-SSZ" is five fields; a sixth is the "-2" of a second start that second.
        guard fields.count == 5 || (fields.count == 6 && Int(fields[5]) != nil) else { return nil }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd'T'HH-mm-ss'Z'"
        guard let date = formatter.date(from: fields.prefix(5).joined(separator: "-")) else { return nil }
        return Int64(date.timeIntervalSince1970) * 1000
    }

    /// The folder name of a start's quarantine: its UTC time, "2026-11-29T17-37-12Z".
    static func quarantineName(_ milliseconds: Int64) -> String {
        var seconds = time_t(milliseconds / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d-%02d-%02dZ", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday, parts.tm_hour,
            parts.tm_min, parts.tm_sec)
    }

    /// Renames into place each temporary file of a put whose row is committed and whose blob is
    /// absent, when the file holds exactly the indexed bytes; returns how many.
    private static func finishInterruptedPuts(index: ImageIndex, blobs: BlobStore) throws -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: blobs.temporaryFolder)) ?? []
        var finished = 0
        for name in names.sorted() {
            guard let key = BlobStore.key(ofTemporary: name), !blobs.exists(key: key),
                  let row = try index.stored(key) else { continue }
            let path = "\(blobs.temporaryFolder)/\(name)"
            let check = row.contentCheck.isEmpty ? row.info.checksum : row.contentCheck
            guard BlobStore.holds(path, size: row.info.sizeBytes, contentCheck: check) else { continue }
            try blobs.publish(temporary: path, key: key)
            finished += 1
        }
        return finished
    }
}
