import Proto
import Testing

/// Which methods are read-only (retried freely, never given an idempotency key) is declared in
/// the .proto with `option idempotency_level = NO_SIDE_EFFECTS;` and generated into each handle.
struct ProtoMethodTests {
    @Test func readOnlyMethodsAreThoseTheProtoMarks() {
        #expect(ProtoCatalog.methods.filter(\.isReadOnly).map(\.path) == [
            "/homepwner.v1.BackupService/ReadSnapshot",
            "/homepwner.v1.CaptureService/ListSources",
            "/homepwner.v1.CaptureService/GetCaptureJob",
            "/homepwner.v1.Health/Check",
            "/homepwner.v1.HistoryService/GetHistory",
            "/homepwner.v1.HistoryService/VerifyHistory",
            "/homepwner.v1.ImageService/GetImage",
            "/homepwner.v1.ImageService/StatImage",
            "/homepwner.v1.ImageService/ListImages",
            "/homepwner.v1.ImageService/GetRendition",
            "/homepwner.v1.ImageService/CacheStats",
            "/homepwner.v1.ImageService/Stats",
            "/homepwner.v1.ItemService/GetItem",
            "/homepwner.v1.ItemService/ListItems",
            "/homepwner.v1.ItemService/Stats",
            "/homepwner.v1.ItemService/GetLocation",
            "/homepwner.v1.ItemService/ListLocations",
            "/homepwner.v1.ItemService/ListCategories",
            "/homepwner.v1.ItemService/GetPolicy",
            "/homepwner.v1.ItemService/GetValuation",
            "/homepwner.v1.ItemService/GetReadiness",
            "/homepwner.v1.JobQueue/Stats",
            "/homepwner.v1.JobQueue/ListJobs",
            "/homepwner.v1.JobQueue/GetJob",
            "/homepwner.v1.JobQueue/GetBatch",
            "/homepwner.v1.Metrics/Stats",
        ])
    }

    @Test func theProtoMarksWhatTheNamingRuleBeforeItChose() {
        // isReadOnly used to guess from the name; moving it to the .proto changed no method.
        for method in ProtoCatalog.methods {
            let byName = ["Get", "List", "Stat", "Check"].contains { method.name.hasPrefix($0) } || method.name.hasSuffix("Stats")
            // Methods the naming rule never saw: VerifyHistory and ReadSnapshot read, their names say otherwise.
            guard ![HistoryServiceRPC.verifyHistory.path, BackupServiceRPC.readSnapshot.path].contains(method.path) else { continue }
            #expect(method.isReadOnly == byName, "\(method.path)")
        }
    }
}
