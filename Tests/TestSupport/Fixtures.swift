import Foundation

/// The test photos the repository carries (`Tests/Fixtures`), found from this file's path so a
/// fresh clone needs nothing beside it.
public enum Fixtures {
    /// `<package>/Tests/Fixtures`.
    public static let folder: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // TestSupport
        .deletingLastPathComponent()  // Tests
        .appendingPathComponent("Fixtures")
        .standardizedFileURL

    /// `Tests/Fixtures/exif-orientation`: one scene with each EXIF orientation (MIT licence).
    public static let orientationFolder = folder.appendingPathComponent("exif-orientation")

    /// The bytes of an orientation photo, e.g. "Landscape_6.jpg".
    public static func orientationPhoto(_ name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: orientationFolder.appendingPathComponent(name)))
    }

    /// `Tests/Fixtures/pillow`: odd real JPEGs from Pillow's test images (HPND licence).
    public static let pillowFolder = folder.appendingPathComponent("pillow")

    /// The bytes of a Pillow test image, e.g. "junk_jpeg_header.jpg".
    public static func pillowImage(_ name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: pillowFolder.appendingPathComponent(name)))
    }
}
