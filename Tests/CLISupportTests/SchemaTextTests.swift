import CLISupport
import Testing

/// Messages described in .proto syntax for people.
struct SchemaTextTests {
    @Test func describeShowsEveryFieldAndTheTypesItUses() throws {
        let text = try #require(SchemaText.describe(message: "homepwner.v1.ListItemsResponse"))
        #expect(text.hasPrefix("message homepwner.v1.ListItemsResponse {\n  repeated homepwner.v1.Item items = 1;"))
        #expect(text.contains("  string next_page_token = 2;"))
        #expect(text.contains("  int64 total_count = 3;"))
        #expect(text.contains("message homepwner.v1.Item {"))
        #expect(text.contains("  repeated string photo_keys = 8;"))
        #expect(try #require(SchemaText.describe(message: "homepwner.v1.PutImageRequest")).contains("enum homepwner.v1.ImageKind {\n  IMAGE_KIND_UNSPECIFIED = 0;\n  ORIGINAL = 1;"))
        #expect(SchemaText.describe(message: "homepwner.v1.Empty") == "message homepwner.v1.Empty {}\n")
        #expect(SchemaText.describe(message: "homepwner.v1.Nope") == nil)
    }
}
