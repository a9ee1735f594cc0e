import CurveAuth
import Proto
@testable import RPC
import Testing

/// Authentication and roles alone: who sent a message, and the PERMISSION_DENIED message for a
/// role its method does not allow.
@Suite struct RoleCheckTests {
    static let readerKey = AllowedKey(role: .reader, publicKey: "reader-public-key", name: "dashboard")

    @Test func withoutKeysEveryoneIsLetIn() {
        #expect(RoleCheck.sender(userID: nil, keys: nil) == .open)
        #expect(RoleCheck.sender(userID: "anything", keys: nil) == .open)
    }

    @Test func anAllowedKeyIsTheCallerAndAnyOtherIsUnknown() {
        let lookup: (String) -> AllowedKey? = { $0 == Self.readerKey.publicKey ? Self.readerKey : nil }
        #expect(RoleCheck.sender(userID: "reader-public-key", entry: lookup)
            == .caller(CallerKey(role: .reader, name: "dashboard", publicKey: "reader-public-key")))
        #expect(RoleCheck.sender(userID: "revoked-key", entry: lookup) == .unknown)
        // With keys, a message without a User-Id is from nobody allowed.
        #expect(RoleCheck.sender(userID: nil, entry: lookup) == .unknown)
    }

    @Test func aRoleItsMethodAllowsPasses() {
        let reader = CallerKey(role: .reader, name: "dashboard", publicKey: "k")
        #expect(RoleCheck.denial(of: reader, path: "/a/Get", callers: [.reader]) == nil)
        let admin = CallerKey(role: .admin, name: nil, publicKey: "k")
        #expect(RoleCheck.denial(of: admin, path: "/a/Delete", callers: []) == nil)
        let worker = CallerKey(role: .worker, name: nil, publicKey: "k")
        #expect(RoleCheck.denial(of: worker, path: "/a/Lease", callers: [.thumbnailWorker]) == nil)
    }

    @Test func anAdminOnlyMethodDeniesOthersNamingTheKey() {
        let reader = CallerKey(role: .reader, name: "dashboard", publicKey: "k")
        #expect(RoleCheck.denial(of: reader, path: "/homepwner.v1.ItemService/DeleteItem", callers: [])
            == "key 'dashboard' has the reader role; /homepwner.v1.ItemService/DeleteItem needs admin"
            + " (an admin can change it: homepwner keys allow ROLE KEY --file ALLOWED)")
    }

    @Test func aDenialSaysWhoMayCall() {
        let unnamed = CallerKey(role: .reader, name: nil, publicKey: "k")
        #expect(RoleCheck.denial(of: unnamed, path: "/a/Lease", callers: [.captureWorker, .thumbnailWorker])
            == "key has the reader role; /a/Lease may be called by admin, capture-worker and thumbnail-worker"
            + " (an admin can change it: homepwner keys allow ROLE KEY --file ALLOWED)")
        let capture = CallerKey(role: .captureWorker, name: "cam-1", publicKey: "k")
        #expect(RoleCheck.denial(of: capture, path: "/a/Thumb", callers: [.thumbnailWorker])?
            .hasPrefix("key 'cam-1' has the capture-worker role; /a/Thumb may be called by admin and thumbnail-worker") == true)
    }
}
