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
    /// True for methods that change nothing (Get…, List…, Stat…, Check, …Stats):
    /// safe to retry after a reply was lost.
    var isReadOnly: Bool { get }
}

/// A typed method handle, e.g. `ItemServiceRPC.createItem`.
public struct ProtoMethod<Request: ProtoMessage, Response: ProtoMessage>: AnyProtoMethod, Hashable {
    public let service: String
    public let name: String

    /// A method of a service.
    public init(service: String, name: String) {
        self.service = service
        self.name = name
    }

    public var path: String { "/\(service)/\(name)" }
    public var requestName: String { Request.protoName }
    public var responseName: String { Response.protoName }
    public var isReadOnly: Bool {
        // By naming convention of proto/: readers are named for what they read.
        ["Get", "List", "Stat", "Check"].contains { name.hasPrefix($0) } || name.hasSuffix("Stats")
    }
}
