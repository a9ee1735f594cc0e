/// The numbers of the `bytes` fields that carry a photo, for the calls that use them where they
/// lie in the received frame (`RPCServer.register(_:largeBytesField:…)`, `RPCClient.call(_:_:largeBytesField:…)`).
/// The .proto files say the same; `LargeBytesFieldsTests` checks each against protobuf-c's descriptor.
extension PutImageRequest {
    /// `data`, the photo.
    public static let dataField: UInt32 = 2
}

extension AppendUploadRequest {
    /// `data`, the next part of the upload.
    public static let dataField: UInt32 = 3
}

extension GetImageResponse {
    /// `data`, the photo or the range of it asked for.
    public static let dataField: UInt32 = 2
}
