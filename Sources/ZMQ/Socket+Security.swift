import CZMQ

/// ZMQ_ZAP_ENFORCE_DOMAIN: zmq.h 4.3.4 declares it only under ZMQ_BUILD_DRAFT_API, yet the
/// library accepts and honours it without drafts (CurveHandshakeTests' fail-closed tests prove it).
let zapEnforceDomainOption: Int32 = 93

// CURVE (zmq_curve(7)) and ZAP (RFC 27) options. Keys are Z85 strings of 40 characters; set
// them before bind/connect, since a handshake uses the options the socket had when it began.
extension Socket {
    /// Makes this socket a CURVE server with `secretKey` (its own, Z85): peers must speak CURVE
    /// and know the matching public key.
    public func setCurveServer(secretKey: String) throws {
        try setCurveKey(ZMQ_CURVE_SECRETKEY, secretKey, "ZMQ_CURVE_SECRETKEY")
        try setIntOption(ZMQ_CURVE_SERVER, 1, "ZMQ_CURVE_SERVER")
    }

    /// Makes this socket a CURVE client of the server whose public key is `serverKey`, with its
    /// own key pair `publicKey`/`secretKey` (all Z85).
    public func setCurveClient(serverKey: String, publicKey: String, secretKey: String) throws {
        try setCurveKey(ZMQ_CURVE_SERVERKEY, serverKey, "ZMQ_CURVE_SERVERKEY")
        try setCurveKey(ZMQ_CURVE_PUBLICKEY, publicKey, "ZMQ_CURVE_PUBLICKEY")
        try setCurveKey(ZMQ_CURVE_SECRETKEY, secretKey, "ZMQ_CURVE_SECRETKEY")
    }

    /// The ZAP domain sent in this socket's authentication requests (ZMQ_ZAP_DOMAIN).
    public func setZAPDomain(_ domain: String) throws {
        let socket = try live("zmq_setsockopt(ZMQ_ZAP_DOMAIN)")
        let bytes = Array(domain.utf8)
        var empty: UInt8 = 0
        let rc = bytes.isEmpty
            ? zmq_setsockopt(socket, ZMQ_ZAP_DOMAIN, &empty, 0)
            : bytes.withUnsafeBytes { zmq_setsockopt(socket, ZMQ_ZAP_DOMAIN, $0.baseAddress, $0.count) }
        try check(rc, "zmq_setsockopt(ZMQ_ZAP_DOMAIN, \(domain))")
    }

    /// With `on`, a handshake fails when no ZAP handler is bound in the context
    /// (ZMQ_ZAP_ENFORCE_DOMAIN); without it, libzmq 4.3 lets CURVE clients in unauthenticated.
    public func setZAPEnforceDomain(_ on: Bool) throws {
        try setIntOption(zapEnforceDomainOption, on ? 1 : 0, "ZMQ_ZAP_ENFORCE_DOMAIN")
    }

    /// The current ZMQ_ZAP_ENFORCE_DOMAIN.
    public var zapEnforceDomain: Bool {
        get throws {
            let socket = try live("zmq_getsockopt(ZMQ_ZAP_ENFORCE_DOMAIN)")
            var value: Int32 = 0
            var size = MemoryLayout<Int32>.size
            try check(zmq_getsockopt(socket, zapEnforceDomainOption, &value, &size), "zmq_getsockopt(ZMQ_ZAP_ENFORCE_DOMAIN)")
            return value != 0
        }
    }

    /// The security mechanism in use: `ZMQ_NULL`, `ZMQ_PLAIN`, `ZMQ_CURVE` or `ZMQ_GSSAPI` (ZMQ_MECHANISM).
    public var mechanism: Int32 {
        get throws {
            let socket = try live("zmq_getsockopt(ZMQ_MECHANISM)")
            var value: Int32 = 0
            var size = MemoryLayout<Int32>.size
            try check(zmq_getsockopt(socket, ZMQ_MECHANISM, &value, &size), "zmq_getsockopt(ZMQ_MECHANISM)")
            return value
        }
    }

    /// True when the socket is set up to use CURVE (server or client).
    public var usesCurve: Bool {
        get throws { try mechanism == ZMQ_CURVE }
    }

    private func setIntOption(_ name: Int32, _ value: Int32, _ label: String) throws(ZMQError) {
        let socket = try live("zmq_setsockopt(\(label))")
        var value = value
        try check(zmq_setsockopt(socket, name, &value, MemoryLayout<Int32>.size), "zmq_setsockopt(\(label), \(value))")
    }

    /// Sets a CURVE key given in Z85; libzmq decodes a 40-byte value itself.
    private func setCurveKey(_ name: Int32, _ key: String, _ label: String) throws(ZMQError) {
        let socket = try live("zmq_setsockopt(\(label))")
        guard ZMQ.hasCurve else {
            throw ZMQError(code: ENOTSUP, operation: "zmq_setsockopt(\(label)) (this libzmq was built without CURVE)")
        }
        // Never put the key itself in an error: it may be a secret.
        guard Z85.isCurveKey(key) else {
            throw ZMQError(code: EINVAL, operation: "zmq_setsockopt(\(label), not a 40-character Z85 key)")
        }
        let rc = Array(key.utf8).withUnsafeBytes { zmq_setsockopt(socket, name, $0.baseAddress, $0.count) }
        try check(rc, "zmq_setsockopt(\(label))")
    }
}
