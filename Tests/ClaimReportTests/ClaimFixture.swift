import ClaimReport
import Clients
import Foundation
import Harness
import PDF
import Proto
import RPC
import Runtime
import TestSupport

/// A running suite (the harness: both services and both workers) holding a small household:
/// Home / Kitchen and Home / Bedroom with items named in three scripts, claim fields filled,
/// real photos attached with their roles (photo, receipt, serial plate, damage), a receipt
/// that is a PDF document, their thumbnails made by the thumbnail worker; an empty
/// Home / Attic; an item in no location; the policy's cover and two categories.
final class ClaimFixture {
    static let torch = "Crème brûlée torch"
    static let fridge = "Холодильник"
    static let tokyo = "東京の冷蔵庫"
    /// A comma and a quote for the CSV, every character HTML escapes for the HTML.
    static let chair = "Chair, \"Eames\" <replica> & 'ottoman'"
    static let hose = "Garden hose"
    static let chairNotes = "A set of six.\nOne has a scratched leg."

    let harness: Harness
    let clients: HomepwnerClients
    /// A folder for this test's outputs, removed by `shutdown()`.
    let folder: String
    var home = Location(), kitchen = Location(), bedroom = Location(), attic = Location()
    /// Items by name.
    var items: [String: Item] = [:]
    /// Attached photos that are JPEG images (each is embedded once in the PDF).
    var jpegPhotos = 0
    /// Attached PDF documents.
    var documents = 0

    /// Starts the harness; `populated` adds the household.
    init(populated: Bool = true) async throws {
        harness = try Harness()
        try harness.start()
        clients = try harness.clients()
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("claimtests-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        if populated { try await populate() }
    }

    func shutdown() {
        clients.close()
        harness.shutdown()
        try? FileManager.default.removeItem(atPath: folder)
    }

    var options: CallOptions { CallOptions(timeoutMilliseconds: 20_000) }

    /// A gatherer over the running services.
    func gatherer(pageSize: Int32 = 500) -> ClaimGatherer {
        ClaimGatherer(services: ClaimServices(clients: clients, endpoints: harness.endpoints, timeoutMilliseconds: 20_000), pageSize: pageSize)
    }

    /// Writes a report of `location` (nil: everything) to `name` in the folder.
    @discardableResult
    func write(
        _ format: ClaimFormat, _ name: String, location: Location? = nil, options: ClaimReportOptions = ClaimReportOptions(),
        pageSize: Int32 = 500
    ) async throws -> (path: String, summary: ClaimReportSummary, gatherer: ClaimGatherer) {
        let path = folder + "/" + name
        let output = try ClaimOutput(path: path, format: format)
        let gatherer = gatherer(pageSize: pageSize)
        let summary = try await ClaimReport.write(location: location, to: output, gatherer: gatherer, options: options)
        return (path, summary, gatherer)
    }

    // MARK: The household

    func location(_ name: String, in parent: Location?, kind: LocationKind) async throws -> Location {
        var request = CreateLocationRequest()
        request.name = name
        request.parentKey = parent?.key ?? ""
        request.kind = kind
        return try await clients.items.call(ItemServiceRPC.createLocation, request, options: options)
    }

    func category(_ name: String, years: Int32, floor: Int32, limit: Int64?) async throws -> Category {
        var request = CreateCategoryRequest()
        request.name = name
        request.depreciation = .straightLine
        request.usefulLifeYears = years
        request.floorPercent = floor
        if let limit { request.limit = Money(currency: "USD", minorUnits: limit) }
        return try await clients.items.call(ItemServiceRPC.createCategory, request, options: options)
    }

    func item(_ configure: (inout CreateItemRequest) -> Void) async throws -> Item {
        var request = CreateItemRequest()
        configure(&request)
        let item = try await clients.items.call(ItemServiceRPC.createItem, request, options: options)
        items[item.name] = item
        return item
    }

    /// Stores `bytes` for `item` and attaches it with `role`.
    func attach(_ bytes: [UInt8], to item: Item, role: PhotoRole) async throws {
        var put = PutImageRequest()
        put.ownerKey = item.key
        put.data = bytes
        let info = try await clients.images.call(ImageServiceRPC.putImage, put, options: options)
        var attach = AttachPhotoRequest()
        attach.itemKey = item.key
        attach.imageKey = info.key
        attach.role = role
        items[item.name] = try await clients.items.call(ItemServiceRPC.attachPhoto, attach, options: options)
        if info.contentType == "image/jpeg" { jpegPhotos += 1 } else if info.contentType == "application/pdf" { documents += 1 }
    }

    /// A one-page PDF receipt, written by the PDF module.
    func receiptPDF() throws -> [UInt8] {
        let path = folder + "/receipt-source.pdf"
        let document = try PDFDocument(path: path, info: PDFDocumentInfo(title: "Receipt"))
        let page = document.beginPage(size: .a4)
        page.drawText("Yodobashi Camera — receipt", at: PDFPoint(x: 72, y: 90), font: PDFFontChain.systemDefault(), size: 16)
        page.drawText("1 refrigerator   189,900 JPY", at: PDFPoint(x: 72, y: 120), font: PDFFontChain.systemDefault(), size: 12)
        try document.endPage()
        try document.finish()
        defer { try? FileManager.default.removeItem(atPath: path) }
        return [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    private func populate() async throws {
        var policy = UpdatePolicyRequest()
        policy.updateMask = ["currency", "policyholder", "insurer", "policy_number", "address", "contents_limit"]
        policy.policy = Policy()
        policy.policy?.currency = "USD"
        policy.policy?.policyholder = "Zoë Ångström"
        policy.policy?.insurer = "Acme Mutual"
        policy.policy?.policyNumber = "HO-3 551-2041"
        policy.policy?.address = "12 Rue de l'Église\n69002 Lyon"
        policy.policy?.contentsLimit = Money(currency: "USD", minorUnits: 5_000_00)
        _ = try await clients.items.call(ItemServiceRPC.updatePolicy, policy, options: options)

        home = try await location("Home", in: nil, kind: .home)
        kitchen = try await location("Kitchen", in: home, kind: .room)
        bedroom = try await location("Bedroom", in: home, kind: .room)
        attic = try await location("Attic", in: home, kind: .room)
        let appliances = try await category("Appliances", years: 10, floor: 20, limit: 2_500_00)
        let furniture = try await category("Furniture", years: 15, floor: 10, limit: nil)

        let torch = try await item {
            $0.name = Self.torch
            $0.serialNumber = "CB-2041"
            $0.locationKey = kitchen.key
            $0.brand = "Iwatani"
            $0.model = "PRO2"
            $0.purchaseDate = "2021-03-14"
            $0.purchasePrice = Money(currency: "USD", minorUnits: 49_99)
            $0.replacementValue = Money(currency: "USD", minorUnits: 59_99)
            $0.categoryKey = appliances.key
            $0.tags = ["kitchen", "gas"]
            $0.purchasePlace = "Sur La Table"
        }
        try await attach(try Fixtures.orientationPhoto("Landscape_6.jpg"), to: torch, role: .photo)
        try await attach(try Fixtures.orientationPhoto("Portrait_3.jpg"), to: torch, role: .serialPlate)
        try await attach(try Fixtures.pillowImage("hopper.jpg"), to: torch, role: .receipt)

        let tokyo = try await item {
            $0.name = Self.tokyo
            $0.serialNumber = "HT-R-7730"
            $0.locationKey = kitchen.key
            $0.brand = "Hitachi"
            $0.model = "R-HW54"
            $0.purchaseDate = "2023-01-20"
            $0.replacementValue = Money(currency: "USD", minorUnits: 1_899_00)
            $0.categoryKey = appliances.key
        }
        try await attach(try Fixtures.orientationPhoto("Landscape_1.jpg"), to: tokyo, role: .photo)
        try await attach(try receiptPDF(), to: tokyo, role: .receipt)

        let fridge = try await item {
            $0.name = Self.fridge
            $0.serialNumber = "ATL-5521"
            $0.locationKey = bedroom.key
            $0.brand = "Атлант"
            $0.model = "ХМ 4208"
            $0.purchaseDate = "2019-07-01"
            $0.purchasePrice = Money(currency: "USD", minorUnits: 480_00)
            $0.replacementValue = Money(currency: "USD", minorUnits: 650_00)
            $0.categoryKey = appliances.key
        }
        try await attach(try Fixtures.orientationPhoto("Portrait_6.jpg"), to: fridge, role: .photo)
        try await attach(try Fixtures.pillowImage("pil_sample_rgb.jpg"), to: fridge, role: .receipt)

        let chair = try await item {
            $0.name = Self.chair
            $0.locationKey = bedroom.key
            $0.quantity = 6
            $0.purchaseDate = "2015-05-02"
            $0.purchasePrice = Money(currency: "USD", minorUnits: 120_00)
            $0.notes = Self.chairNotes
            $0.categoryKey = furniture.key
        }
        try await attach(try Fixtures.orientationPhoto("Landscape_8.jpg"), to: chair, role: .damage)

        _ = try await item {
            $0.name = Self.hose
            $0.valueInDollars = 25
        }
        try await waitForThumbnails()
    }

    /// Until the thumbnail worker has made every photo's thumbnails (so GetRendition answers
    /// the stored ones).
    func waitForThumbnails() async throws {
        let images = clients.images
        let done = Shared(false)
        let deadline = ContinuousClock.now + .seconds(90)
        while ContinuousClock.now < deadline {
            var request = JobStatsRequest()
            request.queue = "thumbnails"
            let stats = try await images.call(JobQueueRPC.stats, request, options: options)
            if stats.ready + stats.leased + stats.scheduled == 0 && stats.done >= Int64(jpegPhotos) {
                done.withLock { $0 = true }
                break
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        guard done.value else { throw Tool.Failure(description: "the thumbnail worker did not make the thumbnails within 90 s") }
    }
}
