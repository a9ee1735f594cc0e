import Proto
import Testing

/// Method and message lookup over protoc-c's descriptors.
struct ProtoRegistryTests {
    @Test(arguments: [
        "/homepwner.v1.ItemService/CreateItem",
        "homepwner.v1.ItemService/CreateItem",
        "ItemService/CreateItem",
        "homepwner.v1.ItemService.CreateItem",
        "ItemService.CreateItem",
        "CreateItem",
        " /homepwner.v1.ItemService/CreateItem ",
        "itemservice/createitem",
    ])
    func methodIsFoundByEveryAcceptedSpelling(_ path: String) throws {
        let method = try #require(ProtoRegistry.method(path: path))
        #expect(method.path == "/homepwner.v1.ItemService/CreateItem")
        #expect(method.service == "homepwner.v1.ItemService")
        #expect(method.name == "CreateItem")
        #expect(method.requestType == "homepwner.v1.CreateItemRequest")
        #expect(method.responseType == "homepwner.v1.Item")
    }

    @Test(arguments: ["", "/", "/homepwner.v1.ItemService/Nope", "Nope/CreateItem", "homepwner.v2.ItemService/CreateItem", "Stats"])
    func unknownOrAmbiguousMethodIsNil(_ path: String) {
        // "Stats" exists in ItemService and JobQueue, so it needs its service.
        #expect(ProtoRegistry.method(path: path) == nil)
    }

    @Test func sameMethodNameInTwoServicesAreToldApartByService() throws {
        #expect(ProtoRegistry.method(path: "ItemService/Stats")?.requestType == "homepwner.v1.ItemStatsRequest")
        #expect(ProtoRegistry.method(path: "JobQueue/Stats")?.requestType == "homepwner.v1.JobStatsRequest")
    }

    @Test func everyCatalogMethodIsFoundWithMatchingTypes() throws {
        #expect(ProtoRegistry.allMethods.count == ProtoCatalog.methods.count)
        for method in ProtoCatalog.methods {
            let found = try #require(ProtoRegistry.method(path: method.path), "\(method.path)")
            #expect(found.path == method.path)
            #expect(found.service == method.service)
            #expect(found.name == method.name)
            #expect(found.requestType == method.requestName)
            #expect(found.responseType == method.responseName)
            #expect(ProtoRegistry.hasMessage(found.requestType))
            #expect(ProtoRegistry.hasMessage(found.responseType))
        }
    }

    @Test func messagesAreFoundByFullNameOnly() {
        #expect(ProtoRegistry.hasMessage("homepwner.v1.Item"))
        #expect(ProtoRegistry.hasMessage(".homepwner.v1.Item"))
        #expect(!ProtoRegistry.hasMessage("Item"))
        #expect(!ProtoRegistry.hasMessage("homepwner.v1.Nope"))
        #expect(ProtoRegistry.messageNames.contains("homepwner.v1.HealthCheckResponse"))
    }

    @Test func fieldsAreListedInNumberOrderWithTheirTypes() throws {
        let fields = try #require(ProtoRegistry.fields(of: "homepwner.v1.ListItemsResponse"))
        #expect(fields.map(\.name) == ["items", "next_page_token", "total_count"])
        #expect(fields.map(\.jsonName) == ["items", "nextPageToken", "totalCount"])
        #expect(fields[0].number == 1 && fields[0].type == .message && fields[0].isRepeated)
        #expect(fields[0].typeName == "homepwner.v1.Item")
        #expect(fields[2].type == .int64 && !fields[2].isRepeated && fields[2].typeName == nil)
        #expect(ProtoRegistry.fields(of: "homepwner.v1.Nope") == nil)
        #expect(ProtoRegistry.enumValues(of: "homepwner.v1.HealthCheckResponse.ServingStatus")?.map(\.name)
            == ["UNKNOWN", "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN"])
    }

    @Test func describeShowsEveryFieldAndTheTypesItUses() throws {
        let text = try #require(ProtoRegistry.describe(message: "homepwner.v1.ListItemsResponse"))
        #expect(text.hasPrefix("message homepwner.v1.ListItemsResponse {\n  repeated homepwner.v1.Item items = 1;"))
        #expect(text.contains("  string next_page_token = 2;"))
        #expect(text.contains("  int64 total_count = 3;"))
        #expect(text.contains("message homepwner.v1.Item {"))
        #expect(text.contains("  repeated string photo_keys = 8;"))
        #expect(try #require(ProtoRegistry.describe(message: "homepwner.v1.PutImageRequest")).contains("enum homepwner.v1.ImageKind {\n  IMAGE_KIND_UNSPECIFIED = 0;\n  ORIGINAL = 1;"))
        #expect(ProtoRegistry.describe(message: "homepwner.v1.Empty") == "message homepwner.v1.Empty {}\n")
        #expect(ProtoRegistry.describe(message: "homepwner.v1.Nope") == nil)
    }
}
