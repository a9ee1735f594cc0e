extension RGBImage {
    /// Turns a stored image upright for its EXIF orientation 1...8.
    ///
    /// 1 as is, 2 mirror, 3 rotate 180°, 4 flip vertically, 5 transpose, 6 rotate 90° clockwise,
    /// 7 transverse, 8 rotate 90° counter-clockwise. Width and height swap for 5...8.
    public func oriented(_ exifOrientation: Int) -> RGBImage {
        precondition((1...8).contains(exifOrientation), "EXIF orientation must be 1...8 (got \(exifOrientation))")
        assertConsistent()
        guard exifOrientation != 1, width > 0, height > 0 else { return self }
        let (w, h) = (width, height)
        // Output pixel (x, y) reads source pixel start + x·dx + y·dy (in pixels): one walk for all eight.
        let (start, dx, dy): (Int, Int, Int) = switch exifOrientation {
        case 2: (w - 1, -1, w)
        case 3: ((h - 1) * w + w - 1, -1, -w)
        case 4: ((h - 1) * w, 1, -w)
        case 5: (0, w, 1)
        case 6: ((h - 1) * w, -w, 1)
        case 7: ((h - 1) * w + w - 1, -w, -1)
        default: (w - 1, w, -1)  // 8
        }
        let (outWidth, outHeight) = exifOrientation >= 5 ? (h, w) : (w, h)
        let output = [UInt8](unsafeUninitializedCapacity: pixels.count) { buffer, initialized in
            pixels.withUnsafeBufferPointer { source in
                var target = 0
                for y in 0..<outHeight {
                    var from = start + y * dy
                    for _ in 0..<outWidth {
                        buffer[target] = source[from * 3]
                        buffer[target + 1] = source[from * 3 + 1]
                        buffer[target + 2] = source[from * 3 + 2]
                        target += 3
                        from += dx
                    }
                }
            }
            initialized = pixels.count
        }
        return RGBImage(width: outWidth, height: outHeight, pixels: output)
    }
}
