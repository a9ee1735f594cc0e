import Foundation
import Proto
import RPC
import Runtime

/// `homepwner image rendition KEY --size WxH [--fill] -o FILE`: a JPEG of the image at a size
/// (GetRendition): a stored thumbnail that fits, or one rendered upright from the original.
enum ImageRenditionCommand {
    static let parser = OptionParser(
        command: "image rendition",
        summary: "Writes a JPEG of an image at a size (GetRendition) to a file ('-' = stdout): the whole image inside the box (fit, never enlarged) or exactly the box, centre-cropped (--fill).",
        usage: "homepwner image rendition KEY --size WxH [--fill] -o FILE",
        options: CommonOptions.endpoints + [
            OptionSpec(name: "size", help: "the box in pixels, e.g. 320x240", valueName: "WxH"),
            OptionSpec(name: "fill", help: "exactly the box: scaled to cover it and centre-cropped", isFlag: true),
            OptionSpec(name: "output", help: "where to write ('-o' for short; '-' = stdout)", valueName: "FILE"),
        ],
        allowsPositionals: true)

    static func run(_ arguments: [String]) async -> Int32 {
        guard let options = HomepwnerCLI.parse(parser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        guard options.positionals.count == 1 else { return ItemCommand.usageError("image rendition", "give exactly one KEY") }
        guard let output = options["output"] else { return ItemCommand.usageError("image rendition", "-o FILE is required") }
        guard let text = options["size"] else { return ItemCommand.usageError("image rendition", "--size WxH is required (e.g. --size 320x240)") }
        guard let (width, height) = parseSize(text) else {
            return ItemCommand.usageError("image rendition", "--size \(text): expected WxH, two whole numbers of pixels from 1 to 65535 (e.g. 320x240)")
        }
        var request = GetRenditionRequest()
        request.key = options.positionals[0]
        request.width = width
        request.height = height
        request.mode = options.bool("fill") ? .fill : .fit
        return await ImageCommand.withClient(options) { client, timeout in
            let rendition = try await client.call(
                ImageServiceRPC.getRendition, request, options: .init(timeoutMilliseconds: max(timeout, 60_000)))
            try await OutputFile.writing(to: output) { try $0.write(rendition.data) }
            let info = rendition.info ?? ImageInfo()
            // A rendered rendition carries the original's key; a stored thumbnail its own.
            let rendered = info.key.lowercased() == request.key.lowercased()
            if options.bool("json") {
                print(
                    "{\"key\": \(jsonString(request.key)), \"width\": \(info.width), \"height\": \(info.height), "
                        + "\"mode\": \(jsonString(request.mode == .fill ? "FILL" : "FIT")), \"bytes\": \(rendition.data.count), "
                        + "\"served\": \(jsonString(rendered ? "rendered" : info.key)), \"output\": \(jsonString(output))}")
            } else if output != "-" {
                let source = rendered ? "rendered" : "stored thumbnail \(info.key)"
                print("wrote \(rendition.data.count) bytes, \(info.width)×\(info.height) JPEG (\(source)) of \(request.key) to \(output)")
            }
        }
    }

    /// "320x240" (or with × or X).
    static func parseSize(_ text: String) -> (Int32, Int32)? {
        let parts = text.lowercased().replacingOccurrences(of: "×", with: "x").split(separator: "x", omittingEmptySubsequences: false)
        guard parts.count == 2, let width = Int32(parts[0]), let height = Int32(parts[1]),
              (1...65535).contains(width), (1...65535).contains(height) else { return nil }
        return (width, height)
    }
}
