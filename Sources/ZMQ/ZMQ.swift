import CZMQ

/// Library-wide information about the linked libzmq.
public enum ZMQ {
    /// The version of the libzmq loaded at run time.
    public static var version: (major: Int, minor: Int, patch: Int) {
        var major: Int32 = 0
        var minor: Int32 = 0
        var patch: Int32 = 0
        zmq_version(&major, &minor, &patch)
        return (Int(major), Int(minor), Int(patch))
    }
}
