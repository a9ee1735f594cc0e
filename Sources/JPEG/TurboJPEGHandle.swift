import CTurboJPEG

/// Owns one tjhandle for a single operation; destroyed on deinit, never shared.
final class TurboJPEGHandle {
    /// What the handle is doing, which decides how a failure is reported.
    enum Operation {
        case decompress
        case compress
        /// A lossless transform (tjTransform): reads the coefficients of one JPEG and writes another.
        case transform
    }

    let raw: UnsafeMutableRawPointer
    let operation: Operation

    init(_ operation: Operation) throws(JPEGError) {
        let handle = switch operation {
        case .decompress: tjInitDecompress()
        case .compress: tjInitCompress()
        case .transform: tjInitTransform()
        }
        guard let handle else {
            // Only a failed malloc gets here; the global error string says so.
            throw JPEGError(kind: .unsupported("TurboJPEG could not start"), message: String(cString: tjGetErrorStr2(nil)))
        }
        self.raw = handle
        self.operation = operation
    }

    deinit {
        tjDestroy(raw)
    }

    /// The one place where TurboJPEG return codes become errors: 0 passes, anything else throws.
    ///
    /// TurboJPEG 2.1 returns -1 for warnings too (after writing the whole output), and
    /// tjGetErrorCode says TJERR_WARNING whenever any warning came first, even before a fatal
    /// error, so the code cannot tell usable output from garbage: every -1 throws.
    func check(_ rc: Int32) throws(JPEGError) {
        guard rc != 0 else { return }
        let message = String(cString: tjGetErrorStr2(raw))
        switch operation {
        case .compress:
            throw JPEGError(kind: .encodeFailed, message: message)
        case .decompress, .transform:
            // A transform only fails on what it reads (the coefficients are written as read).
            throw JPEGError(kind: Self.kind(ofDecompressionMessage: message), message: message)
        }
    }

    /// Sorts libjpeg's decompression messages into kinds; TurboJPEG offers nothing finer.
    static func kind(ofDecompressionMessage message: String) -> JPEGError.Kind {
        // The data ran out: the source manager hit the end and inserted a fake EOI.
        let truncation = ["Premature end of JPEG file", "JPEG datastream contains no image"]
        if truncation.contains(where: message.contains) { return .truncated }
        if message.contains("Not a JPEG file") { return .notJPEG }
        let unsupported = [
            "Unsupported JPEG process", "Unsupported color conversion", "Unsupported JPEG data precision",
            "Could not determine subsampling", "Requested features are incompatible",
            "Arithmetic", "Progressive JPEG image has more than",
        ]
        if unsupported.contains(where: message.contains) { return .unsupported(message) }
        return .corrupt
    }
}
