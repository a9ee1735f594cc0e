/// An ICC colour profile as a JPEG carries it (ICC.1 annex B.4): split into APP2 segments that
/// each start "ICC_PROFILE\0", then the chunk's number 1...n and the count n, then its part.
public struct ICCProfile: Sendable, Equatable {
    /// The whole profile: the chunks' parts joined in the order of their numbers.
    public let bytes: [UInt8]

    /// The APP2 payload's identifier.
    static let identifier = Array("ICC_PROFILE\0".utf8)
    /// The identifier, the chunk's number and the chunk count.
    static let chunkHeader = 14
    /// The most profile bytes one APP2 segment holds: 65,535 less the length field and the
    /// chunk header, as libjpeg's jpeg_write_icc_profile splits them.
    static let maxChunk = 65_535 - 2 - chunkHeader
    /// The largest profile a JPEG can carry: 255 APP2 segments of `maxChunk`.
    static let maxBytes = 255 * maxChunk

    /// Wraps a whole profile (its header is not checked).
    public init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The profile in the APP2 "ICC_PROFILE" segments `chunks` of `data` (a walker's
    /// `iccChunks`, in any order), or nil when they do not make one: no chunk, chunks that do
    /// not agree on their count, a number missing, repeated or out of range. libjpeg's
    /// jpeg_read_icc_profile refuses the same.
    init?(chunks: [JPEGSegment], in data: UnsafeRawBufferPointer) {
        let count = chunks.first.map { Int(data[$0.payload.lowerBound + 13]) } ?? 0
        guard count > 0, chunks.count == count else { return nil }
        var ordered = [Range<Int>?](repeating: nil, count: count)
        for chunk in chunks {
            let number = Int(data[chunk.payload.lowerBound + 12])
            guard Int(data[chunk.payload.lowerBound + 13]) == count, (1...count).contains(number), ordered[number - 1] == nil else {
                return nil
            }
            ordered[number - 1] = (chunk.payload.lowerBound + Self.chunkHeader)..<chunk.payload.upperBound
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(ordered.reduce(0) { $0 + ($1?.count ?? 0) })
        for part in ordered { bytes.append(contentsOf: data[part!]) }
        self.bytes = bytes
    }

    /// The profile's data colour space (header bytes 16..<20): "RGB ", "GRAY", "CMYK"; nil
    /// when the profile is too short to have a header.
    public var colorSpace: String? {
        bytes.count >= 128 ? String(decoding: bytes[16..<20], as: UTF8.self) : nil
    }

    /// The profile as APP2 segments (marker, length, chunk header, part), in order, each part
    /// at most `maxChunk` bytes: what goes right after a JPEG's SOI and APP0.
    var segments: [UInt8] {
        let parts = stride(from: 0, to: bytes.count, by: Self.maxChunk).map { $0..<min(bytes.count, $0 + Self.maxChunk) }
        precondition(parts.count <= 255, "an ICC profile of \(bytes.count) bytes needs more than 255 APP2 segments")
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count + parts.count * (4 + Self.chunkHeader))
        for (index, part) in parts.enumerated() {
            let length = 2 + Self.chunkHeader + part.count
            output += [0xFF, 0xE2, UInt8(length >> 8), UInt8(length & 0xFF)]
            output += Self.identifier
            output += [UInt8(index + 1), UInt8(parts.count)]
            output += bytes[part]
        }
        return output
    }
}
