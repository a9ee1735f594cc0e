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
    /// Who besides an admin key may call it with CURVE keys, from the .proto's
    /// `option (allow) = …;` (options.proto); empty: admin only.
    var callers: [Caller] { get }
}

/// A typed method handle, e.g. `ItemServiceRPC.createItem`.
public struct ProtoMethod<Request: ProtoMessage, Response: ProtoMessage>: AnyProtoMethod, Hashable {
    public let service: String
    public let name: String
    public let isReadOnly: Bool
    public let callers: [Caller]

    /// A method of a service; `isReadOnly` and `callers` as the .proto declares them (the
    /// generated handles in Sources/Proto/Generated carry them). `callers` has no default: a
    /// handle made by hand for a declared method (another reply type) must carry the .proto's.
    public init(service: String, name: String, isReadOnly: Bool, callers: [Caller]) {
        self.service = service
        self.name = name
        self.isReadOnly = isReadOnly
        self.callers = callers
    }

    public var path: String { "/\(service)/\(name)" }

    /// A method is its path: its options come with it from the .proto.
    public static func == (a: Self, b: Self) -> Bool { a.service == b.service && a.name == b.name }
    public func hash(into hasher: inout Hasher) {
        hasher.combine(service)
        hasher.combine(name)
    }
    public var requestName: String { Request.protoName }
    public var responseName: String { Response.protoName }
}
