import Proto
import RPC
import WorkerRuntime

/// Reads of an original only what its thumbnails are made from, within a limit checked before
/// anything large is read (issue 27, defect 10: a JPEG padded to gigabytes with APP segments
/// got the worker OOM-killed on every attempt).
///
/// The segments before the first scan are walked in small ranged reads: a segment a thumbnail
/// uses (DQT, DHT, SOF, DRI, …, APP0 "JFIF", APP1 "Exif" for the orientation, APP2
/// "ICC_PROFILE" for the colours, APP14 "Adobe" for CMYK) is read, any other APPn or COM
/// (XMP, Photoshop, MPF previews, comments) is skipped by its length, unread. From the first
/// SOS on, the rest of the file is the scans, which the decode needs whole. Before that rest is
/// read, what it comes to (kept segments and the rest) is weighed against `limitBytes`: over
/// it, the job fails permanently, naming the limit and the sizes, having read a few segment
/// headers. Anything unexpected in the header (bytes between segments, a missing SOI) ends the
/// walk there: the rest is read from that point as it is, and the decode says what is wrong.
struct ThumbnailSource {
    /// How much is read at a time while the header is walked, from a multiple of it: the image
    /// service checks a ranged read's 1 MiB blocks whole, so each is read (and checked) once
    /// however many segments it holds.
    static let headerReadBytes = 1 << 20
    /// As many marker segments as the decode takes (`DecodeOptions.maxSegments`).
    static let maxSegments = 65_536

    let reader: ImageReader
    /// The most bytes of an original a job may hold (the worker's memory budget).
    let limitBytes: Int

    /// The bytes a thumbnail needs of the original `key` of `size` bytes (StatImage's).
    func read(_ key: String, size: Int64) async throws -> [UInt8] {
        var window = Window(key: key, size: size, reader: reader)
        var kept: [UInt8] = []
        var skipped: Int64 = 0
        var position: Int64 = 0, segments = 0
        if try await window.bytes(at: 0, count: 2) == [0xFF, 0xD8] {
            kept = [0xFF, 0xD8]
            position = 2
            walk: while position + 4 <= size {
                let head = try await window.bytes(at: position, count: 4)
                // A marker not right here (fill bytes, extraneous bytes) is left to the decode.
                guard head[0] == 0xFF, head[1] != 0xFF, head[1] != 0x00 else { break walk }
                let marker = head[1]
                switch marker {
                case 0xDA, 0xD9, 0xD8, 0x01, 0xD0...0xD7:
                    break walk  // the first scan (or something a header does not hold)
                default:
                    let length = Int64(head[2]) << 8 | Int64(head[3])
                    guard length >= 2, position + 2 + length <= size else { break walk }
                    segments += 1
                    guard segments <= Self.maxSegments else {
                        throw JobFailure(
                            "image \(key) cannot be made into thumbnails: it has more than \(Self.maxSegments) marker segments before its first scan (the \(segments)th at offset \(position)), more than the decode takes",
                            permanent: true)
                    }
                    if try await Self.unused(marker, payload: window.bytes(at: position + 4, count: min(16, Int(length) - 2))) {
                        skipped += 2 + length
                    } else {
                        guard kept.count + 2 + Int(length) <= limitBytes else { break walk }
                        kept += try await window.bytes(at: position, count: Int(2 + length))
                    }
                    position += 2 + length
                }
            }
        }
        let needed = Int64(kept.count) + (size - position)
        guard needed <= Int64(limitBytes) else {
            // Not a JPEG (a PNG): it is read whole, and nothing of it is skipped.
            let what = position == 0 ? "all of it" : "its frame and scans; \(skipped) bytes of metadata it does not need are skipped"
            throw JobFailure(
                "image \(key) cannot be made into thumbnails within this worker's memory budget: decoding it needs \(needed) of its \(size) bytes (\(what)), over the budget of \(limitBytes) bytes (--memory-mb)",
                permanent: true)
        }
        kept.reserveCapacity(Int(needed))
        try await reader.append(key, from: position, to: size, into: &kept)
        return kept
    }

    /// Whether a segment with `marker` whose payload starts with `payload` is metadata a
    /// thumbnail does not use.
    static func unused(_ marker: UInt8, payload: [UInt8]) -> Bool {
        switch marker {
        case 0xE0: !payload.starts(with: Array("JFIF\0".utf8))
        case 0xE1: !payload.starts(with: Array("Exif\0\0".utf8))
        case 0xE2: !payload.starts(with: Array("ICC_PROFILE\0".utf8))
        case 0xEE: !payload.starts(with: Array("Adobe".utf8))
        case 0xE3...0xED, 0xEF, 0xFE: true
        default: false
        }
    }

    /// The last `headerReadBytes` read of the original, so walking small segments takes one
    /// read for many, and a skipped segment's bytes are read only when they share its block.
    struct Window {
        let key: String
        let size: Int64
        let reader: ImageReader
        var start: Int64 = 0
        var bytes: [UInt8] = []

        init(key: String, size: Int64, reader: ImageReader) {
            self.key = key
            self.size = size
            self.reader = reader
        }

        /// `count` bytes at `offset` (fewer at the end of the original), read when not held.
        mutating func bytes(at offset: Int64, count: Int) async throws -> [UInt8] {
            let end = min(offset + Int64(count), size)
            guard offset < end else { return [] }
            if offset < start || end > start + Int64(bytes.count) {
                let block = Int64(ThumbnailSource.headerReadBytes)
                var read: [UInt8] = []
                start = offset / block * block
                try await reader.append(key, from: start, to: min(size, max(end, start + block)), into: &read)
                bytes = read
            }
            return Array(bytes[Int(offset - start)..<Int(end - start)])
        }
    }
}
