/// What the capture flow's photo edit asks for: a crop of the upright picture, a zoom about the
/// crop's centre, a shape, an output size and the JPEG quality. `PhotoEditor.edit` applies it.
///
/// Every coordinate is in pixels of the upright image, the stored one turned by its EXIF
/// orientation, as a person sees it. The steps, in order:
/// 1. The crop (`crop`, nil for the whole picture), which must lie inside the upright image.
/// 2. The zoom: the visible region is the crop scaled by 1/`zoom` about its centre, shown at
///    the crop's own size (so 2 shows the middle half of the crop, magnified twice; 0.5 shows
///    the crop in the middle of a region twice its size). Parts of the region outside the
///    upright image are `background`.
/// 3. The shape: `.square` keeps the region's centred square (side the shorter edge), and
///    `.circle` that square with everything outside its inscribed circle `background`, the
///    edge blended by each pixel's coverage (about one pixel wide).
/// 4. The output size: `outputSize` is the longest edge, aspect kept (each edge at least
///    1 pixel), scaled up or down; without it the output is the crop's size (the square's, for
///    the round shapes).
public struct PhotoEdit: Sendable, Equatable {
    /// A rectangle of whole pixels in the upright image.
    public struct Rect: Sendable, Equatable, CustomStringConvertible {
        /// The left edge, from the image's left.
        public var x: Int
        /// The top edge, from the image's top.
        public var y: Int
        /// The width in pixels.
        public var width: Int
        /// The height in pixels.
        public var height: Int

        /// A rectangle from its left, top, width and height.
        public init(x: Int, y: Int, width: Int, height: Int) {
            self.x = x
            self.y = y
            self.width = width
            self.height = height
        }

        /// "x,y,width,height", as messages name it: "10,10,5000,20".
        public var description: String { "\(x),\(y),\(width),\(height)" }
    }

    /// The outline of the output.
    public enum Shape: Sendable, Equatable {
        /// The region as it is.
        case rectangle
        /// The region's centred square.
        case square
        /// The centred square, outside its inscribed circle the background colour.
        case circle
    }

    /// An 8-bit sRGB colour, for what the picture does not cover.
    public struct Color: Sendable, Equatable {
        /// Red, 0...255.
        public var r: UInt8
        /// Green, 0...255.
        public var g: UInt8
        /// Blue, 0...255.
        public var b: UInt8

        /// A colour from its channels.
        public init(r: UInt8, g: UInt8, b: UInt8) {
            self.r = r
            self.g = g
            self.b = b
        }

        /// 255, 255, 255.
        public static let white = Color(r: 255, g: 255, b: 255)

        /// R = G = B: a grey output can show it.
        public var isGrey: Bool { r == g && g == b }
    }

    /// The largest zoom: 64 (a 64th of the crop, each pixel shown 64 times over).
    public static let maxZoom: Double = 64
    /// The output sizes (longest edge) that can be asked for.
    public static let outputSizes: ClosedRange<Int> = 1...8192
    /// The JPEG qualities that can be asked for.
    public static let qualities: ClosedRange<Int> = 1...100
    /// The JPEG quality unless asked otherwise.
    public static let defaultQuality = 90

    /// The part of the upright image to keep; nil keeps all of it.
    public var crop: Rect?
    /// The magnification about the crop's centre: 1 none, above 1 closer, below 1 farther (the
    /// background around the picture); finite and in (0, 64].
    public var zoom: Double
    /// The outline of the output.
    public var shape: Shape
    /// The output's longest edge in pixels, 1...8192, aspect kept; nil keeps the crop's size.
    public var outputSize: Int?
    /// The colour of what the picture does not cover (zoomed out past the image, outside the
    /// circle); white unless asked otherwise.
    public var background: Color
    /// The JPEG quality of a re-encoded output, 1...100 (a lossless crop keeps the original's).
    public var quality: Int

    /// An edit; by default none (`isIdentity`).
    public init(
        crop: Rect? = nil, zoom: Double = 1, shape: Shape = .rectangle, outputSize: Int? = nil, background: Color = .white,
        quality: Int = PhotoEdit.defaultQuality
    ) {
        self.crop = crop
        self.zoom = zoom
        self.shape = shape
        self.outputSize = outputSize
        self.background = background
        self.quality = quality
    }

    /// No crop, zoom 1, a rectangle and no output size: the picture as it is (background and
    /// quality do not matter). The caller need not edit at all; `PhotoEditor.edit` still
    /// answers (see there).
    public var isIdentity: Bool { crop == nil && !changesPixels }

    /// Zoom, shape or output size set: more than a crop, so the pixels are made anew.
    var changesPixels: Bool { zoom != 1 || shape != .rectangle || outputSize != nil }

    /// Refuses, naming the value, what no image could make valid: an empty crop, a zoom that
    /// is not finite or outside (0, 64], an output size outside 1...8192, a quality outside
    /// 1...100. The first problem found is the one reported.
    func check() throws(PhotoEditError) {
        if let crop, crop.width <= 0 || crop.height <= 0 {
            throw PhotoEditError(invalid: "crop \(crop) is empty: its width and height must be positive")
        }
        guard zoom.isFinite, zoom > 0, zoom <= Self.maxZoom else {
            throw PhotoEditError(invalid: "zoom must be finite and in (0, \(Int(Self.maxZoom))] (got \(zoom))")
        }
        if let outputSize, !Self.outputSizes.contains(outputSize) {
            throw PhotoEditError(
                invalid: "outputSize must be in \(Self.outputSizes.lowerBound)...\(Self.outputSizes.upperBound) (got \(outputSize))")
        }
        guard Self.qualities.contains(quality) else {
            throw PhotoEditError(invalid: "quality must be in \(Self.qualities.lowerBound)...\(Self.qualities.upperBound) (got \(quality))")
        }
    }

    /// The crop in an upright image of `width` × `height` (the whole of it without one);
    /// refuses one that is not inside it, naming both. Call after `check`.
    func crop(inUprightWidth width: Int, height: Int) throws(PhotoEditError) -> Rect {
        guard let crop else { return Rect(x: 0, y: 0, width: width, height: height) }
        // Subtractions, so no sum of hostile values can overflow.
        guard crop.x >= 0, crop.y >= 0, crop.x < width, crop.y < height, crop.width <= width - crop.x,
            crop.height <= height - crop.y
        else {
            throw PhotoEditError(invalid: "crop \(crop) is outside the upright image (\(width)×\(height))")
        }
        return crop
    }
}
