@testable import ImageService
import JPEG
import Runtime
import Testing

/// The image service's PNG settings: `--max-decoded-bytes` and `--png-background`, each a flag
/// and a variable with its default, refused outside its range.
@Suite struct PNGSettingsTests {
    static let parser = OptionParser(command: "image-service", summary: "", options: ImageServiceConfiguration.options)

    @Test func theDecodedBytesLimitIsAFlagAndAVariableWithADefaultOf256MiB() throws {
        #expect(ImageStoreLimits().maxDecodedBytes == 256 << 20 && ImageServiceConfiguration().maxDecodedBytes == 256 << 20)
        let option = try #require(ImageServiceConfiguration.options.first { $0.name == "max-decoded-bytes" })
        #expect(option.defaultValue == String(256 << 20) && option.env == "HOMEPWNER_IMAGE_MAX_DECODED_BYTES")
        #expect(try ImageServiceConfiguration(Self.parser.parse([], environment: [:])).maxDecodedBytes == 256 << 20)
        #expect(try ImageServiceConfiguration(Self.parser.parse(["--max-decoded-bytes", "1000"], environment: [:])).maxDecodedBytes == 1000)
        let fromEnvironment = try Self.parser.parse([], environment: ["HOMEPWNER_IMAGE_MAX_DECODED_BYTES": "2000"])
        #expect(try ImageServiceConfiguration(fromEnvironment).maxDecodedBytes == 2000)
        #expect(throws: OptionError.invalidValue(option: "--max-decoded-bytes", value: "0", reason: "must be ≥ 1")) {
            try ImageServiceConfiguration(Self.parser.parse(["--max-decoded-bytes", "0"], environment: [:]))
        }
    }

    @Test func theBackgroundIsRRGGBBFromAFlagOrTheVariableBothPartsRead() throws {
        #expect(ImageStoreLimits().pngBackground == .white)
        #expect(try ImageServiceConfiguration(Self.parser.parse([], environment: [:])).pngBackground == .white)
        let flag = try ImageServiceConfiguration(Self.parser.parse(["--png-background", "#3366CC"], environment: [:]))
        #expect(flag.pngBackground == RGBColor(red: 0x33, green: 0x66, blue: 0xCC))
        let variable = try ImageServiceConfiguration(Self.parser.parse([], environment: ["HOMEPWNER_PNG_BACKGROUND": "000000"]))
        #expect(variable.pngBackground == RGBColor(red: 0, green: 0, blue: 0))
        #expect(throws: OptionError.invalidValue(
            option: "--png-background", value: "white", reason: "not a colour as RRGGBB (six hex digits, e.g. ffffff)"
        )) {
            try ImageServiceConfiguration(Self.parser.parse(["--png-background", "white"], environment: [:]))
        }
        #expect(RGBColor(hex: "12345") == nil && RGBColor(hex: "#1234567") == nil && RGBColor(hex: "ggg000") == nil)
        #expect(RGBColor(red: 0x33, green: 0x66, blue: 0xCC).description == "3366cc")
    }
}
