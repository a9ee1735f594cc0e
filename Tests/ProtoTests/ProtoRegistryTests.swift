import Proto
import Testing

/// Method (by exact path) and message lookup over protoc-c's descriptors.
struct ProtoRegistryTests {
    @Test func methodIsFoundByItsExactPathOnly() {
        #expect(ProtoRegistry.method(path: "/homepwner.v1.ItemService/CreateItem")?.requestType == "homepwner.v1.CreateItemRequest")
        // The spellings people type are the CLI's to read (CLISupport.MethodLookup).
        for spelling in ["ItemService/CreateItem", "CreateItem", "/homepwner.v1.itemservice/createitem", " /homepwner.v1.ItemService/CreateItem"] {
            #expect(ProtoRegistry.method(path: spelling) == nil, "\(spelling)")
        }
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
        #expect(fields.map(\.name) == ["items", "next_page_token", "total_count", "ranked"])
        #expect(fields.map(\.jsonName) == ["items", "nextPageToken", "totalCount", "ranked"])
        #expect(fields[0].number == 1 && fields[0].type == .message && fields[0].isRepeated)
        #expect(fields[0].typeName == "homepwner.v1.Item")
        #expect(fields[2].type == .int64 && !fields[2].isRepeated && fields[2].typeName == nil)
        #expect(ProtoRegistry.fields(of: "homepwner.v1.Nope") == nil)
        #expect(ProtoRegistry.enumValues(of: "homepwner.v1.HealthCheckResponse.ServingStatus")?.map(\.name)
            == ["UNKNOWN", "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN"])
    }
}
