import Foundation
import JPEG
import Runtime
import Testing
import TestSupport
@testable import ImageService

/// Logs go nowhere unless HOMEPWNER_TEST_LOGS is set.
let testLogger = Logger(
    label: "image-test", level: ProcessInfo.processInfo.environment["HOMEPWNER_TEST_LOGS"] == nil ? .critical : .debug)

/// A temporary folder removed on deinit.
final class TemporaryFolder {
    let path: String

    init() throws {
        path = FileManager.default.temporaryDirectory
            .appendingPathComponent("hp-images-\(UUID().uuidString.prefix(8).lowercased())").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// A store in a temporary folder; reopen it on the same folder to simulate a restart.
func makeStore(
    _ folder: TemporaryFolder, budget: Int = 64 << 20, limits: ImageStoreLimits = .init(),
    clock: any WallClock = SystemClock()
) throws -> ImageStore {
    try ImageStore(folder: folder.path + "/images", cache: ImageCache(budgetBytes: budget), limits: limits, clock: clock, logger: testLogger).started()
}

extension ImageStore {
    /// The store, started (`start()`): opened and reconciled with its files.
    func started() throws -> ImageStore {
        try start()
        return self
    }
}

/// The store's refusal, or nil when `body` succeeded.
func storeError<T>(_ body: () async throws -> T) async -> ImageStoreError? {
    do {
        _ = try await body()
        return nil
    } catch let error as ImageStoreError {
        return error
    } catch {
        Issue.record("not an ImageStoreError: \(error)")
        return nil
    }
}

/// Test inputs: the EXIF orientation photos of `Tests/Fixtures` and synthetic JPEGs, PDFs and movies.
enum Samples {
    /// The bytes of e.g. "Landscape_6.jpg".
    static func photo(_ name: String) throws -> [UInt8] {
        try Fixtures.orientationPhoto(name)
    }

    /// A width × height gradient JPEG.
    static func jpeg(width: Int = 64, height: Int = 48) throws -> [UInt8] {
        var pixels: [UInt8] = []
        pixels.reserveCapacity(width * height * 3)
        for y in 0..<height {
            for x in 0..<width {
                pixels += [UInt8(x * 255 / max(1, width - 1)), UInt8(y * 255 / max(1, height - 1)), 90]
            }
        }
        return try JPEG.encode(RGBImage(width: width, height: height, pixels: pixels), quality: 90)
    }

    /// A JPEG whose frame header claims width × height (the scan data is the small image's).
    static func jpegClaiming(width: Int, height: Int) throws -> [UInt8] {
        var data = try jpeg(width: 16, height: 16)
        var i = 2
        while i + 9 < data.count {
            if data[i] == 0xFF, (0xC0...0xC2).contains(data[i + 1]) {
                data[i + 5] = UInt8(height >> 8); data[i + 6] = UInt8(height & 0xFF)
                data[i + 7] = UInt8(width >> 8); data[i + 8] = UInt8(width & 0xFF)
                return data
            }
            i += 1
        }
        fatalError("no SOF marker in the sample JPEG")
    }

    /// An ISO BMFF (MP4) file: an ftyp box then `count` bytes of mdat filler.
    static func mp4(_ count: Int = 10_000) -> [UInt8] {
        var data: [UInt8] = [0, 0, 0, 24] + Array("ftypisom".utf8) + [0, 0, 2, 0] + Array("isomiso2".utf8)
        data += [UInt8(truncatingIfNeeded: (count + 8) >> 24), UInt8(truncatingIfNeeded: (count + 8) >> 16),
                 UInt8(truncatingIfNeeded: (count + 8) >> 8), UInt8(truncatingIfNeeded: count + 8)] + Array("mdat".utf8)
        data += (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        return data
    }
}
