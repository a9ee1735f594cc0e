import Dispatch
import Media
import Proto
import Testing
import TestSupport

@Suite struct MediaSnifferPDFTests {
    static let decodeSlots = DispatchSemaphore(value: 1)

    static func classify(_ data: [UInt8]) throws(MediaError) -> SniffedMedia {
        try MediaSniffer.classify(data, maxPixels: 1 << 26, decodeSlots: decodeSlots)
    }

    static func refusal(_ data: [UInt8]) -> String? {
        do {
            _ = try classify(data)
            return nil
        } catch {
            return error.message
        }
    }

    @Test(arguments: ["1.0", "1.4", "1.7", "2.0"])
    func aPDFOfEachVersionIsADocumentWithoutPixels(version: String) throws {
        let media = try Self.classify(SamplePDF.make(version: version))
        #expect(media.mediaType == .document && media.contentType == "application/pdf")
        #expect(media.width == 0 && media.height == 0 && media.orientation == 0 && media.extraneousBytes == 0)
    }

    @Test func aPDFsEndOfFileMarkerMustBeInItsLastKilobyte() throws {
        let pdf = SamplePDF.make(padding: 4000)
        #expect(Array(pdf.suffix(6)) == Array("%%EOF\n".utf8))
        // "%%EOF\n" and 1018 bytes after it: the marker starts exactly 1024 bytes from the end.
        #expect(try Self.classify(pdf + Array(repeating: 0x20, count: 1018)).contentType == "application/pdf")
        // One byte more and its first "%" is outside the last 1024.
        #expect(Self.refusal(pdf + Array(repeating: 0x20, count: 1019)) == "data: PDF is truncated: no %%EOF marker in its last 1024 bytes")
    }

    @Test func aPDFCutShortIsRefusedAsTruncatedNamingTheMissingMarker() {
        let pdf = SamplePDF.make(padding: 4000)
        for count in [pdf.count / 2, pdf.count - 6, 9] {
            #expect(Self.refusal(Array(pdf.prefix(count))) == "data: PDF is truncated: no %%EOF marker in its last 1024 bytes", "\(count)")
        }
    }

    @Test func aPDFHeaderWithoutAKnownVersionIsRefusedQuotingIt() {
        let cases: [([UInt8], String)] = [
            (SamplePDF.make(version: "1.8"), "%PDF-1.8"),
            (SamplePDF.make(version: "1.10"), "%PDF-1.10"),
            (SamplePDF.make(version: "3.0"), "%PDF-3.0"),
            (SamplePDF.make(version: "x"), "%PDF-x"),
            (Array("%PDF-".utf8) + [0x00, 0xFF, 0x22, 0x0D] + Array("%%EOF".utf8), "%PDF-\\x00\\xff\\x22"),
        ]
        for (data, header) in cases {
            #expect(Self.refusal(data) == "data: PDF header \"\(header)\" names no PDF version (accepted: %PDF-1.0 to %PDF-1.7, %PDF-2.0)")
        }
    }

    @Test func aPDFHeaderAnywhereButTheFirstByteIsNotAPDF() {
        let pdf = [0x20] + SamplePDF.make()
        #expect(Self.refusal(pdf) == "data is not a JPEG or PNG image, a PDF document or a known movie container (first bytes: 20 25 50 44 46 2d 31 2e); accepted: JPEG, PNG, HEIC, PDF, MP4/MOV, Matroska/WebM, AVI")
    }

    /// A JPEG that readers as lenient as Acrobat would also open as a PDF (its header in a
    /// comment within the first 1024 bytes, `%%EOF` after the JPEG's end) is a JPEG here, and
    /// validated as one: it starts `FF D8 FF`, and a PDF must start `%PDF-`.
    @Test func aJPEGCarryingAPDFHeaderAndTrailerIsAValidatedJPEG() throws {
        let jpeg = try Fixtures.orientationPhoto("Portrait_1.jpg")
        let comment = Array("%PDF-1.4\n".utf8)
        let length = comment.count + 2
        let head = [0xFF, 0xD8, 0xFF, 0xFE, UInt8(length >> 8), UInt8(length & 0xFF)] + comment
        let media = try Self.classify(head + jpeg.dropFirst(2) + Array("\n%%EOF\n".utf8))
        #expect(media.mediaType == .image && media.contentType == "image/jpeg" && media.width == 1200 && media.height == 1800)
        // Cut short, it is refused as a JPEG, never let through as a PDF by its trailer.
        let cut = head + jpeg.dropFirst(2).prefix(jpeg.count / 2) + Array("\n%%EOF\n".utf8)
        #expect(Self.refusal(cut)?.hasPrefix("data: JPEG is truncated") == true)
    }

    /// A JPEG behind a PDF header is a document: stored as bytes, never given to the JPEG
    /// decoder, never labelled image/jpeg.
    @Test func aJPEGBehindAPDFHeaderIsADocumentAndNotAJPEG() throws {
        let jpeg = try Fixtures.orientationPhoto("Portrait_1.jpg")
        let disguised = Array("%PDF-1.4\n".utf8) + jpeg + Array("\n%%EOF\n".utf8)
        let media = try Self.classify(disguised)
        #expect(media.mediaType == .document && media.contentType == "application/pdf" && media.width == 0)
        let asJPEG = disguised.withUnsafeBytes { bytes in
            Result { () throws(MediaError) in try MediaSniffer.jpeg(bytes, maxPixels: 1 << 26, decodeSlots: Self.decodeSlots) }
        }
        #expect(throws: MediaError.self) { try asJPEG.get() }
    }

    @Test func aPDFIsCheckedByItsEndsAlone() throws {
        let pdf = SamplePDF.make(padding: 4000)
        #expect(MediaSniffer.startsAsPDF(pdf.prefix(5)) && !MediaSniffer.startsAsPDF(pdf.prefix(4)))
        let media = try MediaSniffer.pdf(head: pdf.prefix(MediaSniffer.headBytes), tail: pdf.suffix(MediaSniffer.pdfTrailerBytes))
        #expect(media.mediaType == .document)
        let notPDF = try #require(throws: MediaError.self) { try MediaSniffer.pdf(head: Array("%PDF".utf8), tail: pdf.suffix(10)) }
        #expect(notPDF.message == "data is not a PDF (it does not start with %PDF-)")
    }
}
