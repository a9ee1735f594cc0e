/// A method of a proto service with its request and response types.
public protocol AnyProtoMethod: Sendable {
    /// "/homepwner.v1.ItemService/CreateItem".
    var path: String { get }
    /// "homepwner.v1.ItemService".
    var service: String { get }
    /// "CreateItem".
    var name: String { get }
    /// Full proto name of the request message.
    var requestName: String { get }
    /// Full proto name of the response message.
    var responseName: String { get }
    /// True for methods that change nothing, marked in the .proto with
    /// `option idempotency_level = NO_SIDE_EFFECTS;`: safe to retry after a reply was lost.
    var isReadOnly: Bool { get }
}

/// A typed method handle, e.g. `ItemServiceRPC.createItem`.
public struct ProtoMethod<Request: ProtoMessage, Response: ProtoMessage>: AnyProtoMethod, Hashable {
    public let service: String
    public let name: String
    public let isReadOnly: Bool

    /// A method of a service; `isReadOnly` as the .proto declares it (the generated handles
    /// in Sources/Proto/Generated carry it).
    public init(service: String, name: String, isReadOnly: Bool) {
        self.service = service
        self.name = name
        self.isReadOnly = isReadOnly
    }

    public var path: String { "/\(service)/\(name)" }
    public var requestName: String { Request.protoName }
    public var responseName: String { Response.protoName }
}
