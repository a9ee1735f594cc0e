/// The colour space a JPEG stores its samples in.
public enum ColorSpace: Sendable, Equatable {
    /// RGB without a colour transform (rare; e.g. some Adobe files).
    case rgb
    /// YCbCr, the usual photo encoding.
    case yCbCr
    /// One grey channel.
    case gray
    /// Four-channel CMYK, usually Adobe-inverted.
    case cmyk
    /// CMYK with the CMY part transformed to YCbCr (Adobe transform 2).
    case ycck
}
