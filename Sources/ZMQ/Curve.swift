import CZMQ

/// Z85 (ZeroMQ RFC 32), the text form of CURVE keys: 5 characters per 4 bytes.
public enum Z85 {
    /// Encodes `bytes`, whose count must be a multiple of 4 (a CURVE key: 32 bytes → 40 characters).
    public static func encode(_ bytes: [UInt8]) throws(ZMQError) -> String {
        guard bytes.count % 4 == 0 else {
            throw ZMQError(code: EINVAL, operation: "zmq_z85_encode(\(bytes.count) bytes: not a multiple of 4)")
        }
        var text = [CChar](repeating: 0, count: bytes.count / 4 * 5 + 1)
        let ok = bytes.withUnsafeBufferPointer { zmq_z85_encode(&text, $0.baseAddress, $0.count) != nil }
        guard ok else { throw ZMQError(code: EINVAL, operation: "zmq_z85_encode(\(bytes.count) bytes)") }
        return String(decoding: text.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Decodes `text`, whose length must be a multiple of 5 and whose characters must all be Z85.
    public static func decode(_ text: String) throws(ZMQError) -> [UInt8] {
        let utf8 = Array(text.utf8)
        // zmq_z85_decode checks the length and each character's range, but a character outside
        // the alphabet that maps into it (e.g. a space) would pass: check the alphabet here.
        guard utf8.count % 5 == 0, utf8.allSatisfy(isAlphabet) else {
            throw ZMQError(code: EINVAL, operation: "zmq_z85_decode(\(utf8.count) characters: not Z85)")
        }
        var bytes = [UInt8](repeating: 0, count: utf8.count / 5 * 4)
        let ok = (utf8 + [0]).withUnsafeBufferPointer { source in
            source.withMemoryRebound(to: CChar.self) { zmq_z85_decode(&bytes, $0.baseAddress) != nil }
        }
        guard ok else { throw ZMQError(code: EINVAL, operation: "zmq_z85_decode(\(utf8.count) characters)") }
        return bytes
    }

    /// The 85 characters of the Z85 alphabet.
    static let alphabet = Array("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#".utf8)

    /// True when `character` is one of the 85.
    public static func isAlphabet(_ character: UInt8) -> Bool {
        alphabetTable[Int(character)]
    }

    private static let alphabetTable: [Bool] = {
        var table = [Bool](repeating: false, count: 256)
        for character in alphabet { table[Int(character)] = true }
        return table
    }()

    /// True when `text` is a CURVE key in Z85: 40 characters of the alphabet.
    public static func isCurveKey(_ text: String) -> Bool {
        text.utf8.count == 40 && text.utf8.allSatisfy(isAlphabet)
    }
}

extension ZMQ {
    /// True when the linked libzmq was built with CURVE (`zmq_has("curve")`).
    public static var hasCurve: Bool { zmq_has("curve") != 0 }

    /// A new CURVE key pair, both keys in Z85 (40 characters); throws `ENOTSUP` naming the cause
    /// when libzmq was built without CURVE.
    public static func curveKeyPair() throws(ZMQError) -> (publicKey: String, secretKey: String) {
        guard hasCurve else {
            throw ZMQError(code: ENOTSUP, operation: "zmq_curve_keypair (this libzmq was built without CURVE: zmq_has(\"curve\") is false)")
        }
        var publicKey = [CChar](repeating: 0, count: 41)
        var secretKey = [CChar](repeating: 0, count: 41)
        try check(zmq_curve_keypair(&publicKey, &secretKey), "zmq_curve_keypair")
        return (string(publicKey), string(secretKey))
    }

    /// The Z85 public key that belongs to the Z85 `secretKey`; throws `EINVAL` for a string
    /// that is not a CURVE key, `ENOTSUP` without CURVE.
    public static func curvePublicKey(secretKey: String) throws(ZMQError) -> String {
        guard hasCurve else {
            throw ZMQError(code: ENOTSUP, operation: "zmq_curve_public (this libzmq was built without CURVE: zmq_has(\"curve\") is false)")
        }
        guard Z85.isCurveKey(secretKey) else {
            throw ZMQError(code: EINVAL, operation: "zmq_curve_public(not a 40-character Z85 key)")
        }
        var publicKey = [CChar](repeating: 0, count: 41)
        try check(zmq_curve_public(&publicKey, secretKey), "zmq_curve_public")
        return string(publicKey)
    }

    /// A NUL-terminated C string as a Swift string.
    private static func string(_ characters: [CChar]) -> String {
        String(decoding: characters.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
