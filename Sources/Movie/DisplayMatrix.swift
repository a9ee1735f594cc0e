/// A video stream's display matrix (ISO/IEC 14496-12 `tkhd`, as libavformat gives it: nine
/// int32, the 2×2 part in 16.16 fixed point) as the EXIF orientation that makes the coded
/// frames upright: phones store portrait video in landscape, rotated by this matrix.
enum DisplayMatrix {
    /// The EXIF orientation (1…8, as `RGBImage.oriented` takes it) of the matrix's 2×2 part,
    /// which maps a coded pixel (x, y), y down, to x' = a·x + c·y, y' = b·x + d·y: each of
    /// the eight quarter turns and mirrors is one sign pattern. Any other (a rotation by
    /// another angle, a scale alone) is shown as coded: 1.
    static func orientation(_ matrix: [Int32]) -> Int {
        guard matrix.count >= 5 else { return 1 }
        let (a, b, c, d) = (sign(matrix[0]), sign(matrix[1]), sign(matrix[3]), sign(matrix[4]))
        switch (a, b, c, d) {
        case (1, 0, 0, 1): return 1
        case (-1, 0, 0, 1): return 2
        case (-1, 0, 0, -1): return 3
        case (1, 0, 0, -1): return 4
        case (0, 1, 1, 0): return 5
        case (0, 1, -1, 0): return 6
        case (0, -1, -1, 0): return 7
        case (0, -1, 1, 0): return 8
        default: return 1
        }
    }

    /// -1, 0 or 1: a coefficient under 1/16 in size counts as 0 (rounding in the file).
    private static func sign(_ value: Int32) -> Int {
        let threshold: Int32 = 1 << 12
        return value > threshold ? 1 : value < -threshold ? -1 : 0
    }
}
