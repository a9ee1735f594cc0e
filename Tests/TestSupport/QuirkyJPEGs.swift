/// The Pillow test images of `Tests/Fixtures/pillow` with extraneous bytes between marker
/// segments, and where libjpeg-turbo 2.1's djpeg finds them ("Corrupt JPEG data: N extraneous
/// bytes before marker 0xNN"; the offsets read off the files).
public enum QuirkyJPEGs {
    /// One file: its name, the run of extraneous bytes, and its stored size.
    public struct File: Sendable {
        public let name: String
        /// The extraneous bytes: they end where the next marker's FF is.
        public let run: Range<Int>
        public let width: Int, height: Int
    }

    /// Every viewer opens these; each has one run, 1 to 16 bytes long.
    public static let files: [File] = [
        // "hello" between COM and DQT: 5 extraneous bytes before marker 0xdb.
        File(name: "junk_jpeg_header.jpg", run: 81..<86, width: 1024, height: 768),
        // The end of a Photoshop resource past its APP13: 16 extraneous bytes before marker 0xe1.
        File(name: "photoshop-200dpi-broken.jpg", run: 4442..<4458, width: 200, height: 200),
        // FF 00 00 02 after APP14: 4 extraneous bytes before marker 0xdb.
        File(name: "jpeg_ff00_header.jpg", run: 21793..<21797, width: 300, height: 225),
        // An APP14 one byte short: 1 extraneous byte before marker 0xdb.
        File(name: "truncated_app14.jpg", run: 21834..<21835, width: 100, height: 100),
    ]

    /// `data` without the bytes of `run`: the file as libjpeg reads it once it has skipped them.
    public static func removing(_ run: Range<Int>, from data: [UInt8]) -> [UInt8] {
        Array(data[..<run.lowerBound]) + Array(data[run.upperBound...])
    }
}
