extension RGBImage {
    /// Converts CMYK samples to RGB with the naive formula (no colour management).
    ///
    /// Adobe-marked files store every channel inverted (255 = no ink), so R = C·K/255 there;
    /// plain CMYK stores ink amounts, so R = (255 − C)(255 − K)/255.
    init(width: Int, height: Int, cmyk: [UInt8], adobeInverted: Bool) {
        precondition(cmyk.count == width * height * 4, "CMYK samples do not match \(width)×\(height)")
        let count = width * height
        let rgb = [UInt8](unsafeUninitializedCapacity: count * 3) { buffer, initialized in
            cmyk.withUnsafeBufferPointer { source in
                for pixel in 0..<count {
                    var c = Int(source[pixel * 4]), m = Int(source[pixel * 4 + 1])
                    var y = Int(source[pixel * 4 + 2]), k = Int(source[pixel * 4 + 3])
                    if !adobeInverted { c = 255 - c; m = 255 - m; y = 255 - y; k = 255 - k }
                    buffer[pixel * 3] = UInt8((c * k + 127) / 255)
                    buffer[pixel * 3 + 1] = UInt8((m * k + 127) / 255)
                    buffer[pixel * 3 + 2] = UInt8((y * k + 127) / 255)
                }
            }
            initialized = count * 3
        }
        self.init(width: width, height: height, pixels: rgb)
    }
}
