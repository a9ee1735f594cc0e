/// A JPEG embedded in a document by `PDFDocument.addJPEG(_:)`: its bytes are already in the
/// file; this handle names the image object so any later page can draw it, as often as it likes.
public struct PDFImage: Sendable, Hashable {
    /// The colour space the JPEG's samples are in.
    public enum ColorSpace: Sendable, Hashable {
        /// One component.
        case gray
        /// Three components (YCbCr or RGB in the file).
        case rgb
        /// Four components (CMYK or YCCK in the file).
        case cmyk
    }

    /// Pixels across, as stored in the JPEG (before any EXIF rotation).
    public let width: Int
    /// Pixels down, as stored in the JPEG (before any EXIF rotation).
    public let height: Int
    /// The colour space of the samples.
    public let colorSpace: ColorSpace
    /// The EXIF orientation (1…8, 1 when absent), which `PDFPage.drawImage` applies.
    public let orientation: Int
    /// The image XObject's object number.
    let objectNumber: Int
    /// The document the image belongs to.
    let documentID: UInt64

    init(header: JPEGHeader, objectNumber: Int, documentID: UInt64) {
        width = header.width
        height = header.height
        colorSpace = header.components == 1 ? .gray : header.components == 3 ? .rgb : .cmyk
        orientation = header.orientation
        self.objectNumber = objectNumber
        self.documentID = documentID
    }

    /// Orientations 5 to 8 turn the picture a quarter, swapping its sides.
    private var isTurned: Bool { orientation >= 5 }

    /// Width as the picture is seen, after the EXIF orientation.
    public var displayWidth: Int { isTurned ? height : width }
    /// Height as the picture is seen, after the EXIF orientation.
    public var displayHeight: Int { isTurned ? width : height }

    /// The largest rectangle with the picture's aspect ratio (as seen, after EXIF orientation)
    /// that fits in `rect`, centred in it: where to draw the image so it is not stretched.
    public func fit(into rect: PDFRect) -> PDFRect {
        rect.aspectFit(width: Double(displayWidth), height: Double(displayHeight))
    }

    /// The resource name pages use for the image ("/Im7").
    var resourceName: String { "/Im\(objectNumber)" }

    /// The `cm` operands that map the image's unit square onto `rect` (PDF coordinates, origin
    /// bottom-left) so the picture appears upright as its EXIF orientation says.
    func placement(x: Double, y: Double, width w: Double, height h: Double) -> [Double] {
        switch orientation {
        case 2: [-w, 0, 0, h, x + w, y]
        case 3: [-w, 0, 0, -h, x + w, y + h]
        case 4: [w, 0, 0, -h, x, y + h]
        case 5: [0, -h, -w, 0, x + w, y + h]
        case 6: [0, -h, w, 0, x, y + h]
        case 7: [0, h, w, 0, x, y]
        case 8: [0, h, -w, 0, x + w, y]
        default: [w, 0, 0, h, x, y]
        }
    }

    /// The image XObject dictionary for a JPEG of `length` bytes.
    static func dictionary(for header: JPEGHeader, length: Int) -> String {
        let colorSpace = header.components == 1 ? "/DeviceGray" : header.components == 3 ? "/DeviceRGB" : "/DeviceCMYK"
        // Adobe's CMYK JPEGs store inverted samples; the APP14 segment is the only sign.
        let decode = header.components == 4 && header.adobe ? " /Decode [1 0 1 0 1 0 1 0]" : ""
        return "<< /Type /XObject /Subtype /Image /Width \(header.width) /Height \(header.height) /ColorSpace \(colorSpace)"
            + " /BitsPerComponent \(header.bitsPerComponent)\(decode) /Filter /DCTDecode /Length \(length) >>"
    }
}
