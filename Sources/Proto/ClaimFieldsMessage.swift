/// The claim fields CreateItemRequest and UpdateItemRequest carry under the same names as Item's
/// (items.proto): the item service reads them from either request, the CLI fills either.
public protocol ClaimFieldsMessage {
    var locationKey: String { get set }
    var quantity: Int32 { get set }
    var brand: String { get set }
    var model: String { get set }
    var notes: String { get set }
    var purchaseDate: String { get set }
    var purchasePrice: Money? { get set }
    var purchasePlace: String { get set }
    var replacementValue: Money? { get set }
    var replacementSource: String { get set }
    var replacementAsOf: String { get set }
    var warrantyExpires: String { get set }
    var tags: [String] { get set }
    var categoryKey: String { get set }
    var customFields: [CustomField] { get set }
}

extension CreateItemRequest: ClaimFieldsMessage {}
extension UpdateItemRequest: ClaimFieldsMessage {}
