import CLISupport
import Testing

/// A method named on the command line, in every spelling the CLI accepts.
struct MethodLookupTests {
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
        let method = try #require(MethodLookup.method(named: path))
        #expect(method.path == "/homepwner.v1.ItemService/CreateItem")
        #expect(method.service == "homepwner.v1.ItemService")
        #expect(method.name == "CreateItem")
        #expect(method.requestType == "homepwner.v1.CreateItemRequest")
        #expect(method.responseType == "homepwner.v1.Item")
    }

    @Test(arguments: ["", "/", "/homepwner.v1.ItemService/Nope", "Nope/CreateItem", "homepwner.v2.ItemService/CreateItem", "Stats"])
    func unknownOrAmbiguousMethodIsNil(_ path: String) {
        // "Stats" exists in ItemService and JobQueue, so it needs its service.
        #expect(MethodLookup.method(named: path) == nil)
    }

    @Test func sameMethodNameInTwoServicesAreToldApartByService() throws {
        #expect(MethodLookup.method(named: "ItemService/Stats")?.requestType == "homepwner.v1.ItemStatsRequest")
        #expect(MethodLookup.method(named: "JobQueue/Stats")?.requestType == "homepwner.v1.JobStatsRequest")
    }
}
