import CaptureWorker
import ImageService
import JPEG
import Media
import Runtime
import Testing
import ThumbnailWorker

/// `--max-pixels` and `--max-decoded-bytes` are one pair of options for image-service and both
/// workers: the same names, variables and defaults, so one setting moves all three.
@Suite struct DecodeLimitOptionTests {
    @Test func imageServiceAndBothWorkersTakeTheSameLimitsFromTheSameVariables() throws {
        for name in ["max-pixels", "max-decoded-bytes"] {
            let tables = [ImageServiceConfiguration.options, ThumbnailWorkerHost.options, CaptureWorkerHost.options]
            let specs = try tables.map { table in try #require(table.first { $0.name == name }, "\(name) missing") }
            #expect(Set(specs.map { "\($0.env ?? "") \($0.defaultValue ?? "")" }).count == 1, "\(name): \(specs.map { ($0.env, $0.defaultValue) })")
        }
        let parser = OptionParser(command: "thumbnail-worker", summary: "", options: ThumbnailWorkerHost.options)
        let defaults = try DecodeLimitOption.decodeOptions(parser.parse([], environment: [:]))
        #expect(defaults.maxPixels == DecodeOptions().maxPixels && defaults.maxDecodedBytes == DecodeOptions.defaultMaxDecodedBytes)
        let environment = ["HOMEPWNER_IMAGE_MAX_DECODED_BYTES": "536870912", "HOMEPWNER_IMAGE_MAX_PIXELS": "60000000"]
        let raised = try DecodeLimitOption.decodeOptions(parser.parse([], environment: environment))
        #expect(raised.maxDecodedBytes == 512 << 20 && raised.maxPixels == 60_000_000)
        let flag = try DecodeLimitOption.decodeOptions(parser.parse(["--max-decoded-bytes", "1000"], environment: environment))
        #expect(flag.maxDecodedBytes == 1000 && flag.maxPixels == 60_000_000)
        #expect(throws: OptionError.invalidValue(option: "--max-pixels", value: "0", reason: "must be ≥ 1")) {
            try DecodeLimitOption.decodeOptions(parser.parse(["--max-pixels", "0"], environment: [:]))
        }
    }
}
