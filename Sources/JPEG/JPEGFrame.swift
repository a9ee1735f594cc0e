/// A JPEG's frame header (SOFn): the image size and its components, which every scan's
/// MCUs and blocks are counted from (T.81 A.2).
struct JPEGFrame {
    /// One colour component of the frame.
    struct Component {
        /// The identifier scans name it by.
        let id: UInt8
        /// Horizontal and vertical sampling factors, 1...4.
        let h: Int, v: Int
        /// The quantisation table it uses, 0...3.
        let quantTable: Int
        /// Blocks across and down in a non-interleaved scan of it.
        var blocksWide = 0, blocksHigh = 0
    }

    /// SOF0 ... SOF15.
    let marker: UInt8
    /// Where its marker is, for messages.
    let offset: Int
    let width: Int, height: Int
    let components: [Component]
    let hMax: Int, vMax: Int

    /// SOF2 and SOF10: several scans refine the coefficients.
    var progressive: Bool { marker == 0xC2 || marker == 0xCA }
    /// SOF9 and SOF10: arithmetic coding instead of Huffman.
    var arithmetic: Bool { marker == 0xC9 || marker == 0xCA }

    /// Whether `marker` starts a frame header (SOF0...SOF15; C4, C8 and CC are DHT, JPG, DAC).
    static func isFrameMarker(_ marker: UInt8) -> Bool {
        (0xC0...0xCF).contains(marker) && marker != 0xC4 && marker != 0xC8 && marker != 0xCC
    }

    /// The coding process a frame marker names, for messages.
    static func process(of marker: UInt8) -> String {
        switch marker {
        case 0xC0: "baseline"
        case 0xC1: "extended sequential"
        case 0xC2: "progressive"
        case 0xC3: "lossless"
        case 0xC5: "differential sequential"
        case 0xC6: "differential progressive"
        case 0xC7: "differential lossless"
        case 0xC9: "arithmetic-coded sequential"
        case 0xCA: "arithmetic-coded progressive"
        case 0xCB: "arithmetic-coded lossless"
        default: "arithmetic-coded differential"
        }
    }

    /// Parses the SOFn segment `segment`; refuses what libjpeg-turbo 2.1 cannot decode with
    /// the reason, before anything is allocated for it.
    init(_ segment: JPEGSegment, in data: UnsafeRawBufferPointer) throws(JPEGError) {
        let name = JPEGSegment.name(of: segment.marker), at = segment.offset
        guard [0xC0, 0xC1, 0xC2, 0xC9, 0xCA].contains(segment.marker) else {
            throw JPEGError(
                kind: .unsupported("\(Self.process(of: segment.marker)) JPEG"),
                message: "the \(name) frame at offset \(at) is \(Self.process(of: segment.marker)) JPEG, which is not supported (baseline, extended, progressive and arithmetic-coded are)")
        }
        let p = segment.payload.lowerBound
        guard segment.payload.count >= 6 else {
            throw JPEGError(kind: .corrupt, message: "the \(name) segment at offset \(at) is \(segment.payload.count + 2) bytes, too short for a frame header")
        }
        let precision = Int(data[p])
        height = Int(data[p + 1]) << 8 | Int(data[p + 2])
        width = Int(data[p + 3]) << 8 | Int(data[p + 4])
        let count = Int(data[p + 5])
        guard precision == 8 else {
            throw JPEGError(
                kind: .unsupported("\(precision)-bit samples"),
                message: "the \(name) frame at offset \(at) has \(precision)-bit samples; only 8-bit JPEGs are supported")
        }
        guard (1...4).contains(count) else {
            throw JPEGError(
                kind: .unsupported("\(count) components"),
                message: "the \(name) frame at offset \(at) has \(count) components; 1 to 4 are supported")
        }
        guard segment.payload.count == 6 + 3 * count else {
            throw JPEGError(
                kind: .corrupt,
                message: "the \(name) segment at offset \(at) is \(segment.payload.count + 2) bytes; a frame of \(count) components is \(8 + 3 * count)")
        }
        guard width > 0 else {
            throw JPEGError(kind: .corrupt, message: "the \(name) frame at offset \(at) declares a width of 0")
        }
        guard height > 0 else {
            throw JPEGError(
                kind: .unsupported("DNL"),
                message: "the \(name) frame at offset \(at) declares a height of 0 (to follow in a DNL marker), which is not supported")
        }
        // libjpeg-turbo's JPEG_MAX_DIMENSION.
        guard width <= 65500, height <= 65500 else {
            throw JPEGError(
                kind: .unsupported("over 65500 pixels across"),
                message: "the \(name) frame at offset \(at) is \(width)×\(height); the decoder reads at most 65500 pixels in each direction")
        }
        var components: [Component] = []
        for index in 0..<count {
            let c = p + 6 + 3 * index
            let h = Int(data[c + 1] >> 4), v = Int(data[c + 1] & 15), table = Int(data[c + 2])
            guard (1...4).contains(h), (1...4).contains(v) else {
                throw JPEGError(
                    kind: .corrupt,
                    message: "component \(data[c]) of the \(name) frame at offset \(at) has sampling factors \(h)×\(v) (each must be 1 to 4)")
            }
            guard table <= 3 else {
                throw JPEGError(
                    kind: .corrupt,
                    message: "component \(data[c]) of the \(name) frame at offset \(at) uses quantisation table \(table) (0 to 3)")
            }
            components.append(Component(id: data[c], h: h, v: v, quantTable: table))
        }
        hMax = components.map(\.h).max()!
        vMax = components.map(\.v).max()!
        for index in components.indices {
            components[index].blocksWide = Self.ceilDiv(width * components[index].h, hMax * 8)
            components[index].blocksHigh = Self.ceilDiv(height * components[index].v, vMax * 8)
        }
        self.marker = segment.marker
        self.offset = at
        self.components = components
    }

    static func ceilDiv(_ a: Int, _ b: Int) -> Int { (a + b - 1) / b }
}
