import JPEG
import Runtime

/// `--max-pixels` and `--max-decoded-bytes`, the limits of every part that decodes a photo:
/// image-service (validating uploads, renditions), thumbnail-worker and capture-worker. They
/// read the same environment variables, so one setting changes the limits for all of them: a
/// photo the service stores is one the workers will decode.
public enum DecodeLimitOption {
    /// `--max-pixels`: `HOMEPWNER_IMAGE_MAX_PIXELS`, default `DecodeOptions().maxPixels`.
    public static let maxPixels = OptionSpec(
        name: "max-pixels", env: EnvironmentNames.imageMaxPixels, defaultValue: String(DecodeOptions().maxPixels),
        help: "largest width × height of a JPEG, PNG or HEIC accepted; give every service and worker the same",
        valueName: "PIXELS")

    /// `--max-decoded-bytes`: `HOMEPWNER_IMAGE_MAX_DECODED_BYTES`, default `DecodeOptions.defaultMaxDecodedBytes`.
    public static let maxDecodedBytes = OptionSpec(
        name: "max-decoded-bytes", env: EnvironmentNames.imageMaxDecodedBytes,
        defaultValue: String(DecodeOptions.defaultMaxDecodedBytes),
        help: "largest pixel buffer a PNG (width × height × 4) or HEIC (coded width × height × 8, × 11 with alpha) is decoded into, checked from its header before decoding; give every service and worker the same",
        valueName: "BYTES")

    /// Both options.
    public static let specs = [maxPixels, maxDecodedBytes]

    /// The limits given, each at least 1 (a usage error otherwise), as `DecodeOptions` with the
    /// other settings at their defaults.
    public static func decodeOptions(_ options: ParsedOptions) throws -> DecodeOptions {
        DecodeOptions(maxPixels: try positive(options, maxPixels), maxDecodedBytes: try positive(options, maxDecodedBytes))
    }

    /// An option's value, at least 1.
    public static func positive(_ options: ParsedOptions, _ spec: OptionSpec) throws -> Int {
        let value = try options.int(spec.name)
        guard value >= 1 else {
            throw OptionError.invalidValue(option: "--\(spec.name)", value: String(value), reason: "must be ≥ 1")
        }
        return value
    }
}

extension DecodeLimitOption {
    /// The option whose limit refused a photo (`--max-pixels` or `--max-decoded-bytes`), nil
    /// when `error` is not a limit's refusal.
    public static func flag(refusing error: any Error) -> String? {
        if let error = error as? JPEGError, case .tooManyPixels = error.kind { return "--" + maxPixels.name }
        if let error = error as? PNGError {
            if case .tooManyPixels = error.kind { return "--" + maxPixels.name }
            if case .tooManyBytes = error.kind { return "--" + maxDecodedBytes.name }
        }
        if let error = error as? HEIFError {
            if case .tooManyPixels = error.kind { return "--" + maxPixels.name }
            if case .tooManyBytes = error.kind { return "--" + maxDecodedBytes.name }
        }
        return nil
    }

    /// `error` described (as `message` when given), and when a limit refused the photo, which
    /// option sets it: a worker's limits lower than image-service's refuse photos the service stored.
    public static func describe(_ error: any Error, as message: String? = nil) -> String {
        let message = message ?? "\(error)"
        guard let flag = flag(refusing: error) else { return message }
        return "\(message) (\(flag) of this worker; give image-service and the workers the same)"
    }
}
