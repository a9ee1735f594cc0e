import Capture
import Digest
import Foundation
import JPEG
import Media
import Proto
import RPC
import Runtime
import WorkerRuntime

/// One job of the `capture` queue: obtains the photo or movie from its source, validates it,
/// stores the ORIGINAL untouched, applies the edit and stores it as EDITED, attaches both to
/// the item, and answers the `CaptureOutcome` the job is completed with.
///
/// - The same bytes already attached to the item are not stored again: the outcome says
///   duplicate and names that photo (its edit, if one was asked, is still made from it).
/// - What is stored is keyed by the job (`storedKey`), so an attempt that runs again after a
///   crash puts the same keys and takes up what the earlier one stored (a put answers the image
///   there, a chunked upload finds it there and sends nothing) and attached.
/// - An item deleted meanwhile: what this job stored is deleted, and the job fails NOT_FOUND.
/// - Every refusal fails the job permanently, with `NAME (code): message` (`RPCError`), which
///   GetCaptureJob reads its code from; what may pass (a service restarting) is retried.
/// - A failure deletes only images under the job's keys, never one that stays attached, and
///   never the image an upload gave (`image_key`: another item may hold it).
public struct CaptureJobHandler: Sendable {
    /// Applies an edit to a JPEG; throws `RPCError(.invalidArgument)` for an edit that does not
    /// fit the photo. `lossless` tells whether the pixels were left as they were (a DCT crop).
    public typealias Editor = @Sendable (_ jpeg: [UInt8], _ edit: Edit) throws -> (data: [UInt8], lossless: Bool)
    /// Decodes a JPEG whole (under the pixel limit); throws why it cannot.
    public typealias Decoder = @Sendable (_ jpeg: [UInt8]) throws -> Void
    /// What decoding or editing a JPEG holds at its peak, weighed against the slots' budget.
    public typealias Weigher = @Sendable (_ jpeg: [UInt8]) -> Int

    /// The most bytes a photo or movie from the library or the camera may have, and a photo
    /// stored with one PutImage; larger ones go through a chunked upload.
    public static let maxPutBytes = 32 << 20
    /// The largest file read from the library.
    public static let maxSourceBytes = 1 << 30
    /// The most photos an item holds (item-service's limit, `ItemInput.maxPhotosPerItem`).
    static let maxPhotosPerItem = 100

    let items: ClientConnection
    let images: ClientConnection
    let reader: CaptureSourceReader
    let slots: ComputeSlots
    let weigher: Weigher
    let editor: Editor
    let decoder: Decoder
    let maxPixels: Int

    /// A handler talking to item-service through `items` and to image-service through
    /// `images`, reading sources as `sources` says, waiting for the camera command on
    /// `threads`; decodes and edits run within `slots`.
    public init(
        items: ClientConnection, images: ClientConnection, sources: CaptureSources, threads: BlockingPool,
        slots: ComputeSlots = ComputeSlots(count: .max),
        weigher: @escaping Weigher = { _ in 0 }, maxPixels: Int = 100_000_000, editor: @escaping Editor, decoder: @escaping Decoder
    ) {
        self.weigher = weigher
        self.items = items
        self.images = images
        self.reader = CaptureSourceReader(sources: sources, maxBytes: Self.maxSourceBytes, threads: threads)
        self.slots = slots
        self.editor = editor
        self.decoder = decoder
        self.maxPixels = maxPixels
    }

    /// Runs `job` and returns its result's bytes (a `CaptureOutcome`).
    public func run(_ job: Job) async throws -> [UInt8] {
        try await JobRunner.typed(CaptureRequest.self) { request, job in
            do {
                return try await capture(request, job)
            } catch {
                // (No `catch let … as`: Swift 6.3 miscompiles some in async closures.)
                if let rpc = error as? RPCError, Self.isFinal(rpc.code) { throw JobFailure(rpc.description, permanent: true) }
                throw error
            }
        }(job)
    }

    /// Codes that another attempt would only get again.
    static func isFinal(_ code: StatusCode) -> Bool {
        [.invalidArgument, .notFound, .failedPrecondition, .permissionDenied, .outOfRange, .alreadyExists, .deadlineExceeded]
            .contains(code)
    }

    /// The keys a job stores under, the same at each of its attempts.
    struct OwnKeys: Sendable {
        var original: String
        var edited: String
        var all: [String] { [original, edited] }
    }

    func capture(_ request: CaptureRequest, _ job: Job) async throws -> CaptureOutcome {
        let item = try await item(request.itemKey)
        let own = OwnKeys(original: storedKey(job, "original"), edited: storedKey(job, "edited"))
        // The photos this attempt attached that the item did not hold before it.
        var attached: [String] = []
        do {
            return try await capture(request, into: item, own: own, attached: &attached)
        } catch {
            try await cleanUp(after: error, item: item.key, own: own, attached: attached)
            throw error
        }
    }

    /// The capture of `request` for `item` (as read at the start of the attempt).
    func capture(_ request: CaptureRequest, into item: Item, own: OwnKeys, attached: inout [String]) async throws -> CaptureOutcome {
        let edit = request.edit.flatMap { $0.isEmpty ? nil : $0 }
        // What an earlier attempt attached already takes no more room.
        let candidates = [request.imageKey.isEmpty ? own.original : request.imageKey.lowercased()] + (edit == nil ? [] : [own.edited])
        let adding = candidates.filter { !item.photoKeys.contains($0) }.count
        guard item.photoKeys.count + adding <= Self.maxPhotosPerItem else {
            throw RPCError.failedPrecondition(
                "item \(item.key) has \(item.photoKeys.count) photos already; this capture adds \(adding), and an item holds at most \(Self.maxPhotosPerItem): detach one first")
        }
        let source = try await obtain(request)
        // What the bytes are: a JPEG photo, decoded whole; a movie, by its container.
        let media = try classify(source)
        if media.mediaType == .movie {
            if request.mediaType == .image { throw RPCError.invalidArgument("\(source.name) is a movie (\(media.contentType)), not the photo media_type asks for") }
            if edit != nil { throw RPCError.invalidArgument("\(source.name) is a movie (\(media.contentType)): a movie is stored whole and takes no edit") }
        } else if request.mediaType == .movie {
            throw RPCError.invalidArgument("\(source.name) is a photo, not the movie media_type asks for")
        }
        // A photo checked and its edit made before anything is stored (an edit that does not
        // fit the photo, a crop outside it, fails the job with nothing stored); a movie hashed.
        let prepared = media.mediaType == .movie
            ? Prepared(checksum: try await checksum(of: source)) : try await prepare(source, edit: edit)
        let (checksum, edited) = (prepared.checksum, prepared.edited)
        var outcome = CaptureOutcome()
        let originalPrimary = request.makePrimary && edited == nil
        // Dedupe: the same bytes attached to this item already are that photo.
        let except = own.all + [source.storedKey].compactMap { $0 }
        if let duplicate = try await attachedPhoto(withChecksum: checksum, of: item, except: except) {
            (outcome.originalKey, outcome.duplicate) = (duplicate, true)
            // What an earlier attempt stored of it and did not attach goes.
            if source.storedKey == nil && !item.photoKeys.contains(own.original) { try await deleteImage(own.original) }
            if originalPrimary { try await attach(duplicate, to: item, primary: true, recording: &attached) }
        } else {
            let originalKey = source.storedKey ?? own.original
            if source.storedKey == nil {
                try await storeOriginal(source, checksum: checksum, key: originalKey, owner: item.key, contentType: media.contentType)
            }
            let holder = try await attachHolding(
                originalKey, checksum: checksum, to: item, primary: originalPrimary, deleting: source.storedKey == nil,
                except: except, recording: &attached)
            (outcome.originalKey, outcome.duplicate) = (holder, holder != originalKey)
        }
        if let edited {
            let editedChecksum = SHA256.checksum(edited)
            try await put(
                edited, checksum: editedChecksum, key: own.edited, owner: item.key, kind: .edited, parent: outcome.originalKey,
                contentType: "image/jpeg")
            outcome.editedKey = try await attachHolding(
                own.edited, checksum: editedChecksum, to: item, primary: request.makePrimary, deleting: true,
                except: except, recording: &attached)
        }
        return outcome
    }

    /// Attaches `key` and answers the photo that holds its content: `key`, or the photo of the
    /// same bytes attached first (by another capture or attach at the same moment, or the same
    /// crop of the same photo again). item-service keeps one photo per content, decided in the
    /// attach's transaction, and makes that one primary if asked; what this job stored under
    /// `key` then goes (`deleting`: the key is this job's own), or it would be an orphan.
    func attachHolding(
        _ key: String, checksum: String, to item: Item, primary: Bool, deleting: Bool, except: [String],
        recording attached: inout [String]
    ) async throws -> String {
        let after = try await attach(key, to: item, primary: primary, recording: &attached)
        if after.photoKeys.contains(key) { return key }
        guard let holder = try await attachedPhoto(withChecksum: checksum, of: after, except: except) else {
            throw RPCError.aborted("the photo holding the content of \(key) left item \(item.key) meanwhile; the capture runs again")
        }
        if deleting { try await deleteImage(key) }
        return holder
    }

    /// Undoes what a failed attempt did that no retry would take up, and says why it failed.
    ///
    /// - The item deleted meanwhile (a put refused for a deleted owner, an attach to no item):
    ///   the images under the job's keys are deleted, and the job fails NOT_FOUND.
    /// - A refusal no retry gets past (an attach refused): the photos this attempt attached are
    ///   detached, then the images under the job's keys that the item does not hold are deleted
    ///   (one an earlier attempt attached stays, with the item).
    /// - Anything else is retried, and the next attempt takes up what this one stored.
    ///
    /// A task cancelled (its lease lost, or the worker stopping) deletes nothing: the job runs
    /// again, perhaps at once elsewhere, under the same keys.
    func cleanUp(after error: any Error, item: String, own: OwnKeys, attached: [String]) async throws {
        guard !Task.isCancelled else { return }
        if try await !itemExists(item) {
            for key in own.all.reversed() { try? await deleteImage(key) }
            throw RPCError.notFound("item \(item) was deleted while its capture ran; nothing of it was kept")
        }
        guard let refusal = error as? RPCError, Self.isFinal(refusal.code) else { return }
        for key in attached.reversed() { try? await detach(key, from: item) }
        // Only what the item does not hold (asked again: a failure to ask deletes nothing).
        guard let now = try? await self.item(item) else { return }
        for key in own.all.reversed() where !now.photoKeys.contains(key) { try? await deleteImage(key) }
    }

    /// Bounds the whole-structure checks of JPEGs at once (`MediaSniffer`'s decode of an
    /// arithmetic-coded one).
    static let sniffSlots = DispatchSemaphore(value: 2)
}
