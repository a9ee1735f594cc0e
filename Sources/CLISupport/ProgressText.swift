/// The text of a progress bar, shared by every command that draws one.
public enum ProgressText {
    /// "[#########.....................]" for `fraction` (clamped to 0…1) of `width` cells.
    public static func bar(fraction: Double, width: Int = 30) -> String {
        let filled = Int(min(1, max(0, fraction)) * Double(width))
        return "[" + String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled) + "]"
    }
}
