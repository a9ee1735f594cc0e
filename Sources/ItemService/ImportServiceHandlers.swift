import Proto
import RPC
import Runtime

/// The ImportService methods: staged in `ImportStaging`, checked and committed in one store
/// job, so the import's items become visible in one transaction or not at all.
enum ImportServiceHandlers {
    /// Registers BeginImport, AddImport, CommitImport and AbortImport (admin only: the .proto
    /// allows no other caller).
    static func register(on server: RPCServer, store: ItemStoreQueue, staging: ImportStaging, photoCheck: PhotoCheck) {
        server.register(ImportServiceRPC.beginImport) { request, _ in
            try staging.begin(request)
        }
        server.register(ImportServiceRPC.addImport) { request, _ in
            try staging.add(request)
        }
        server.register(ImportServiceRPC.abortImport) { request, _ in
            var response = AbortImportResponse()
            response.aborted = staging.end(request.importId)
            return response
        }
        server.register(ImportServiceRPC.commitImport) { request, context in
            let staged = try staging.staged(request.importId)
            let plan = try await store.perform { try $0.planImport(staged) }
            guard !request.dryRun else { return plan.response(committed: false) }
            guard plan.conflicts.isEmpty || request.skipConflicts else { return plan.response(committed: false) }
            // Every photo must be in the image service with the bytes the export hashed, and
            // belong to an item that lists it (or to none), before anything is written.
            var checksums: [String: String] = [:]
            for (photo, items) in plan.photos.sorted(by: { $0.key < $1.key }) {
                var stat = StatImageRequest()
                stat.key = photo
                let info: ImageInfo
                do {
                    info = try await photoCheck.client.call(
                        ImageServiceRPC.statImage, stat,
                        options: CallOptions(timeoutMilliseconds: UInt32(PhotoCheck.maxWaitMilliseconds), retry: RetryPolicy(maxAttempts: 3)))
                } catch {
                    if (error as? RPCError)?.code == .notFound {
                        throw RPCError.failedPrecondition(
                            "photo \(photo) of item \(items[0]) is not in the image service; put it (PutImage with key \(photo)) and commit again. Nothing was imported")
                    }
                    throw RPCError.unavailable(
                        "the image service at \(photoCheck.client.endpoint) could not say whether photo \(photo) exists (\(error)); nothing was imported: retry")
                }
                guard info.checksum == staged.photos[photo] else {
                    throw RPCError.failedPrecondition(
                        "photo \(photo) of item \(items[0]) holds other bytes here (\(info.checksum)) than the export's (\(staged.photos[photo] ?? "")); nothing was imported")
                }
                guard info.ownerKey.isEmpty || items.contains(info.ownerKey) else {
                    throw RPCError.failedPrecondition(
                        "photo \(photo) of item \(items[0]) belongs to owner \(info.ownerKey) here; nothing was imported")
                }
                checksums[photo] = info.checksum
            }
            let now = staging.clock.nowMilliseconds()
            let actor = context.historyActor
            let verified = checksums
            let done = try await store.perform { store in
                try store.acting(as: actor) {
                    // Planned again in the transaction's own job: nothing changed in between can slip past.
                    let plan = try store.planImport(staged)
                    guard plan.conflicts.isEmpty || request.skipConflicts else { return plan.response(committed: false) }
                    if let photo = plan.photos.keys.first(where: { verified[$0] == nil }) {
                        throw RPCError.aborted("photo \(photo) was not checked with the image service; commit again")
                    }
                    try store.applyImport(plan, source: staged.sourceHead, checksums: verified, now: now)
                    var response = plan.response(committed: true)
                    response.head = try HistoryChain.head(store.db)
                    return response
                }
            }
            if done.committed { staging.end(request.importId) }
            return done
        }
    }
}
