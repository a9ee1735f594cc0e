import Digest
import Foundation
import JPEG
import Media
import Proto
import RPC
import WorkerRuntime

/// Where a capture's bytes are, and how they are checked and edited within the memory budget.
///
/// Bytes held in memory outside the budget are at most `maxPutBytes` a job (the camera's at most
/// `CaptureSourceReader.maxCameraBytes`). A library file over that is never read into memory
/// whole: a movie is hashed and uploaded a piece at a time; a photo is read whole only inside
/// its decode's slot, weighed with what the decode holds, and uploaded from the file again.
/// An uploaded photo over that is read inside its slot too.
extension CaptureJobHandler {
    /// The bytes a source gave.
    enum Content: Sendable {
        /// What the camera printed, inline upload data, a library file of up to `maxPutBytes`.
        case bytes([UInt8])
        /// A library file over `maxPutBytes`.
        case file(LibraryFile)
        /// The image a chunked upload stored (`image_key`).
        case stored(ImageInfo)
    }

    /// What a source gave, and how errors name it.
    struct Obtained: Sendable {
        var content: Content
        var name: String
        /// The upload's own image (`image_key`), which this job did not make.
        var storedKey: String?
    }

    /// The SHA-256 of what a source gave ("sha256:<hex>"), and the edit of a photo.
    struct Prepared: Sendable {
        var checksum: String
        var edited: [UInt8]?
    }

    /// How much of a file or image is read to find a JPEG's header (its size sets the weight
    /// of its decode); a header further in weighs the photo as the whole budget.
    static let headerBytes = 1 << 20

    func obtain(_ request: CaptureRequest) async throws -> Obtained {
        switch request.source {
        case .upload where !request.imageKey.isEmpty:
            guard let info = try await stat(request.imageKey) else {
                throw RPCError.notFound("image_key \(request.imageKey) names no stored image; commit the chunked upload first")
            }
            guard info.kind == .original else {
                throw RPCError.invalidArgument("image_key \(request.imageKey) is not an ORIGINAL (it is kind \(info.kind.rawValue))")
            }
            guard info.ownerKey.isEmpty || info.ownerKey == request.itemKey.lowercased() else {
                throw RPCError.failedPrecondition("image \(request.imageKey) belongs to owner \(info.ownerKey), not to item \(request.itemKey)")
            }
            let name = "image \(request.imageKey)"
            // A small photo is read now; a movie is never read, a large photo in its slot.
            if info.mediaType != .movie && info.sizeBytes <= Self.maxPutBytes {
                return Obtained(content: .bytes(try await read(request.imageKey)), name: name, storedKey: info.key)
            }
            return Obtained(content: .stored(info), name: name, storedKey: info.key)
        case .upload:
            return Obtained(content: .bytes(request.data), name: "the uploaded data")
        case .library:
            return try inMemoryIfSmall(try reader.libraryFile(request.sourcePath))
        case .recent:
            return try inMemoryIfSmall(try reader.recentPhoto())
        case .camera:
            let shot = try await reader.camera()
            return Obtained(content: .bytes(shot.bytes), name: "the camera's photo")
        default:
            throw RPCError.invalidArgument("source \(request.source.rawValue) is not one this worker knows")
        }
    }

    private func inMemoryIfSmall(_ file: LibraryFile) throws(RPCError) -> Obtained {
        Obtained(content: file.size <= Self.maxPutBytes ? .bytes(try file.readAll()) : .file(file), name: file.name)
    }

    /// What the bytes are: sniffed whole when in memory (a JPEG's whole structure), by their
    /// first bytes in a file (a JPEG is then checked in its slot), as the image service said
    /// for an upload's image.
    func classify(_ source: Obtained) throws -> (mediaType: MediaType, contentType: String) {
        let media: (mediaType: MediaType, contentType: String)
        switch source.content {
        case .stored(let info):
            media = (info.mediaType, info.contentType)
        case .file(let file):
            let head = try file.read(at: 0, count: MediaSniffer.headBytes)
            if JPEG.sniff(head) { return (.image, "image/jpeg") }
            // A PNG is refused below by its signature, not validated for nothing; a HEIC is
            // checked whole in its slot (`prepare`), as a JPEG in a file is.
            media = try Self.signature(head) ?? sniff(head, source.name)
        case .bytes(let bytes):
            media = try Self.signature(bytes) ?? sniff(bytes, source.name)
        }
        guard media.mediaType == .movie || media.contentType == "image/jpeg" || media.contentType == "image/heic" else {
            throw RPCError.invalidArgument("\(source.name) is \(media.contentType), which capture cannot decode; send a JPEG or HEIC photo or a movie")
        }
        return media
    }

    /// A PNG's or a HEIC's type by its signature alone; nil for anything else.
    private static func signature(_ bytes: [UInt8]) -> (mediaType: MediaType, contentType: String)? {
        PNG.sniff(bytes) ? (.image, "image/png") : HEIF.sniff(bytes) ? (.image, "image/heic") : nil
    }

    private func sniff(_ bytes: [UInt8], _ name: String) throws -> (mediaType: MediaType, contentType: String) {
        do {
            let media = try MediaSniffer.classify(bytes, maxPixels: maxPixels, decodeSlots: Self.sniffSlots)
            return (media.mediaType, media.contentType)
        } catch {
            throw RPCError.invalidArgument("\(name) is not a photo or movie capture can take: \(error)")
        }
    }

    /// Checks a photo (a whole decode, unless the edit decodes it anyway) and makes its edit,
    /// in a slot weighed by what that holds; a photo not in memory is read in the slot too and
    /// let go at its end.
    func prepare(_ source: Obtained, edit: Edit?) async throws -> Prepared {
        let (decoder, editor) = (decoder, editor)
        // An edit other than a crop decodes the whole photo itself; a crop may be made on the
        // DCT coefficients without a decode, so the photo is decoded first.
        let decodes = edit?.isCropOnly ?? true
        @Sendable func work(_ bytes: [UInt8]) throws -> [UInt8]? {
            // A HEIC's edit always decodes it whole (there is no lossless crop of it).
            if decodes && !(edit != nil && HEIF.sniff(bytes)) { try decoder(bytes) }
            return try edit.map { try editor(bytes, $0).data }
        }
        switch source.content {
        case .bytes(let bytes):
            let edited = try await slots.run(cost: weigher(bytes)) { Result { try work(bytes) } }.get()
            return Prepared(checksum: SHA256.checksum(bytes), edited: edited)
        case .file(let file):
            try fitsTheBudget(file.size, source.name)
            let cost = weight(of: file.size, head: try file.read(at: 0, count: Self.headerBytes))
            return try await slots.run(cost: cost) {
                Result { () throws -> Prepared in
                    let bytes = try file.readAll()
                    _ = try sniff(bytes, source.name)
                    return Prepared(checksum: SHA256.checksum(bytes), edited: try work(bytes))
                }
            }.get()
        case .stored(let info):
            try fitsTheBudget(Int(info.sizeBytes), source.name)
            let cost = weight(of: Int(info.sizeBytes), head: try await read(info.key, count: Self.headerBytes))
            return try await slots.runReading(cost: cost) {
                let bytes = try await read(info.key)
                return Prepared(checksum: info.checksum, edited: try work(bytes))
            }
        }
    }

    /// A photo is read whole into memory to be checked and edited, so one larger than the whole
    /// memory budget (a JPEG padded with gigabytes of metadata) would hold more than the budget
    /// even running alone: refused for good, naming the limit, before a byte of it is read.
    private func fitsTheBudget(_ size: Int, _ name: String) throws(RPCError) {
        guard size > slots.budgetBytes else { return }
        throw RPCError.failedPrecondition(
            "\(name) is a JPEG of \(size) bytes, over this capture worker's memory budget of \(slots.budgetBytes) bytes (--memory-mb): a photo is read whole to be checked and edited; strip its metadata padding, or give the worker more memory")
    }

    /// What a JPEG of `size` bytes whose first bytes are `head` holds while it is decoded: its
    /// bytes and the decode's (`weigher`); the whole budget when its header is not among them
    /// (it then runs alone).
    private func weight(of size: Int, head: [UInt8]) -> Int {
        let decode = weigher(head)
        return decode > 0 ? size + decode : slots.budgetBytes
    }

    /// The SHA-256 of a source's bytes ("sha256:<hex>"); a file's read a piece at a time.
    func checksum(of source: Obtained) async throws -> String {
        switch source.content {
        case .bytes(let bytes):
            return SHA256.checksum(bytes)
        case .file(let file):
            var hash = SHA256()
            try await file.forEachPiece(of: Self.pieceBytes) { hash.update($0) }
            return hash.checksum()
        case .stored(let info):
            return info.checksum
        }
    }

    /// The piece of a file read and sent at a time.
    static let pieceBytes = 8 << 20
}
