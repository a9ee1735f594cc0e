/// What a JPEG's headers declare, read without decoding pixels.
public struct JPEGHeader: Sendable, Equatable {
    /// Stored width in pixels, before EXIF orientation.
    public let width: Int
    /// Stored height in pixels, before EXIF orientation.
    public let height: Int
    /// The colour space of the stored samples.
    public let colorSpace: ColorSpace
    /// Chroma subsampling: "4:4:4", "4:2:2", "4:2:0", "4:0:0" (grey), "4:4:0", "4:1:1" or "unknown".
    public let subsampling: String
    /// The EXIF orientation 1...8; 1 when the tag is absent or invalid.
    public let orientation: Int

    /// Creates a header from its parts.
    public init(width: Int, height: Int, colorSpace: ColorSpace, subsampling: String, orientation: Int) {
        self.width = width
        self.height = height
        self.colorSpace = colorSpace
        self.subsampling = subsampling
        self.orientation = orientation
    }

    /// The size once EXIF orientation is applied: width and height swap for orientations 5...8.
    public var orientedSize: (width: Int, height: Int) {
        orientation >= 5 ? (height, width) : (width, height)
    }
}
