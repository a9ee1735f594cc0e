import Testing
@testable import Runtime

@Suite("OptionParser")
struct OptionParserTests {
    let parser = OptionParser(
        command: "item-service",
        summary: "Serves items over ZeroMQ.",
        options: [
            OptionSpec(
                name: "rpc",
                env: "HOMEPWNER_ITEM_RPC",
                defaultValue: "tcp://127.0.0.1:5551",
                help: "RPC endpoint (ROUTER)",
                valueName: "ENDPOINT"
            ),
            OptionSpec(name: "max-bytes", env: "HOMEPWNER_MAX_MESSAGE_BYTES", defaultValue: "1024", help: "Largest message"),
            OptionSpec(name: "verbose", env: "HOMEPWNER_VERBOSE", help: "Log more", isFlag: true),
            OptionSpec(name: "data-dir", help: "Data directory", valueName: "PATH"),
        ]
    )

    @Test func flagBeatsEnvironmentWhichBeatsDefault() throws {
        let environment = ["HOMEPWNER_ITEM_RPC": "tcp://env:1", "HOMEPWNER_MAX_MESSAGE_BYTES": "2048"]

        let fromFlag = try parser.parse(["--rpc", "tcp://flag:1"], environment: environment)
        #expect(fromFlag["rpc"] == "tcp://flag:1")
        #expect(fromFlag.source(of: "rpc") == .flag)
        #expect(fromFlag["max-bytes"] == "2048")
        #expect(fromFlag.source(of: "max-bytes") == .environment)

        let fromDefault = try parser.parse([], environment: [:])
        #expect(fromDefault["rpc"] == "tcp://127.0.0.1:5551")
        #expect(fromDefault.source(of: "rpc") == .default)
        #expect(fromDefault["data-dir"] == nil)
    }

    @Test func emptyEnvironmentVariableCountsAsUnset() throws {
        let options = try parser.parse([], environment: ["HOMEPWNER_ITEM_RPC": ""])
        #expect(options["rpc"] == "tcp://127.0.0.1:5551")
        #expect(options.source(of: "rpc") == .default)
    }

    @Test func equalsFormSetsTheValueAndKeepsLaterEqualsSigns() throws {
        let options = try parser.parse(["--data-dir=/srv/a=b", "--rpc=tcp://x:2"], environment: [:])
        #expect(options["data-dir"] == "/srv/a=b")
        #expect(options["rpc"] == "tcp://x:2")
    }

    @Test func repeatedOptionKeepsTheLastValue() throws {
        let options = try parser.parse(["--rpc", "tcp://a:1", "--rpc", "tcp://b:2"], environment: [:])
        #expect(options["rpc"] == "tcp://b:2")
    }

    @Test(arguments: ["--help", "-h"])
    func helpFlagThrowsHelpRequestedWithTheHelpText(flag: String) {
        #expect(throws: OptionError.helpRequested(parser.helpText)) {
            try parser.parse(["--rpc", "tcp://x:1", flag, "--bogus"], environment: [:])
        }
    }

    @Test func helpTextListsEveryOptionWithEnvironmentVariableAndDefault() {
        let lines = parser.helpText.split(separator: "\n").map(String.init)
        #expect(lines.first == "OVERVIEW: Serves items over ZeroMQ.")
        #expect(lines.contains("USAGE: item-service [options]"))
        #expect(lines.contains(
            "  --rpc ENDPOINT      RPC endpoint (ROUTER) [env HOMEPWNER_ITEM_RPC] (default: tcp://127.0.0.1:5551)"
        ))
        #expect(lines.contains("  --max-bytes VALUE   Largest message [env HOMEPWNER_MAX_MESSAGE_BYTES] (default: 1024)"))
        #expect(lines.contains("  --verbose           Log more [env HOMEPWNER_VERBOSE]"))
        #expect(lines.contains("  --data-dir PATH     Data directory"))
        #expect(lines.contains { $0.hasPrefix("  -h, --help ") })
    }

    @Test func unknownOptionSuggestsTheClosestName() {
        #expect(throws: OptionError.unknownOption("--rcp", suggestion: "--rpc")) {
            try parser.parse(["--rcp", "tcp://x:1"], environment: [:])
        }
        #expect(throws: OptionError.unknownOption("--data-dri", suggestion: "--data-dir")) {
            try parser.parse(["--data-dri=/x"], environment: [:])
        }
        #expect(
            OptionError.unknownOption("--rcp", suggestion: "--rpc").description
                == "unknown option '--rcp'; did you mean '--rpc'? (see --help)"
        )
    }

    @Test func aValueStartingWithADashThatNoOptionNameCouldBeIsPositional() throws {
        let parser = OptionParser(command: "keys allow", summary: "s", options: [], allowsPositionals: true)
        // A Z85 CURVE public key starts with '-' once in 85.
        #expect(try parser.parse(["admin", "-GO#Upe-)Hfv-^TKLI3AFod((wh4<7FDnwm5<h4s"], environment: [:]).positionals
            == ["admin", "-GO#Upe-)Hfv-^TKLI3AFod((wh4<7FDnwm5<h4s"])
        #expect(throws: OptionError.unknownOption("-json", suggestion: nil)) { try parser.parse(["-json"], environment: [:]) }
        #expect(OptionError.unknownOption("-json", suggestion: nil).description.contains("goes after '--'"))
    }

    @Test func unknownOptionFarFromEveryNameHasNoSuggestion() {
        #expect(throws: OptionError.unknownOption("--zzzzzz", suggestion: nil)) {
            try parser.parse(["--zzzzzz"], environment: [:])
        }
        #expect(throws: OptionError.unknownOption("-x", suggestion: nil)) {
            try parser.parse(["-x"], environment: [:])
        }
    }

    @Test func invalidIntegerErrorNamesTheOptionAndTheValue() throws {
        let options = try parser.parse(["--max-bytes", "12k"], environment: [:])
        let error = #expect(throws: OptionError.self) { try options.int("max-bytes") }
        #expect(error == .invalidValue(option: "--max-bytes", value: "12k", reason: "expected an integer"))
        #expect(error?.description == "invalid value '12k' for option '--max-bytes': expected an integer")
        #expect(try parser.parse([], environment: [:]).int("max-bytes") == 1024)
    }

    @Test func invalidIntegerFromEnvironmentNamesTheVariable() throws {
        let options = try parser.parse([], environment: ["HOMEPWNER_MAX_MESSAGE_BYTES": "lots"])
        let error = #expect(throws: OptionError.self) { try options.int("max-bytes") }
        #expect(error?.description.contains("'lots' for option '--max-bytes'") == true)
        #expect(error?.description.contains("HOMEPWNER_MAX_MESSAGE_BYTES") == true)
    }

    @Test func flagIsTrueWhenPresentFalseWhenAbsentAndTakesNoValue() throws {
        let absent = try parser.parse([], environment: [:])
        #expect(absent.bool("verbose") == false)

        let present = try OptionParser(command: "c", summary: "s", options: parser.options, allowsPositionals: true)
            .parse(["--verbose", "file.jpg"], environment: [:])
        #expect(present.bool("verbose"))
        #expect(present.positionals == ["file.jpg"])

        #expect(try parser.parse(["--verbose=false"], environment: ["HOMEPWNER_VERBOSE": "1"]).bool("verbose") == false)
        #expect(try parser.parse([], environment: ["HOMEPWNER_VERBOSE": "YES"]).bool("verbose"))
    }

    @Test func flagWithUnreadableBooleanIsRejected() {
        #expect(throws: OptionError.invalidValue(option: "--verbose", value: "maybe", reason: "expected true or false")) {
            try parser.parse(["--verbose=maybe"], environment: [:])
        }
        #expect(throws: OptionError.self) {
            try parser.parse([], environment: ["HOMEPWNER_VERBOSE": "maybe"])
        }
    }

    @Test func optionWithoutValueThrowsMissingValue() {
        #expect(throws: OptionError.missingValue("--rpc")) {
            try parser.parse(["--rpc"], environment: [:])
        }
        #expect(throws: OptionError.missingValue("--rpc")) {
            try parser.parse(["--rpc", "--verbose"], environment: [:])
        }
    }

    @Test func unsetOptionWithoutDefaultThrowsFromString() throws {
        let options = try parser.parse([], environment: [:])
        #expect(throws: OptionError.missingValue("--data-dir")) { try options.string("data-dir") }
        #expect(try options.string("rpc") == "tcp://127.0.0.1:5551")
    }

    @Test func positionalsAreCollectedAndDoubleDashEndsOptions() throws {
        let parser = OptionParser(command: "homepwner", summary: "CLI", options: parser.options, allowsPositionals: true)
        let options = try parser.parse(["add", "--rpc", "tcp://x:1", "-", "--", "--verbose", "-h"], environment: [:])
        #expect(options.positionals == ["add", "-", "--verbose", "-h"])
        #expect(options["rpc"] == "tcp://x:1")
        #expect(options.bool("verbose") == false)
        #expect(parser.helpText.contains("USAGE: homepwner [options] [arguments...]"))
    }

    @Test func positionalIsRejectedWhenNotAllowed() {
        #expect(throws: OptionError.unexpectedArgument("extra")) {
            try parser.parse(["--rpc", "tcp://x:1", "extra"], environment: [:])
        }
    }

    @Test func negativeNumberIsAcceptedAsAValue() throws {
        let options = try parser.parse(["--max-bytes", "-5"], environment: [:])
        #expect(try options.int("max-bytes") == -5)
    }

    @Test func editDistanceCountsTranspositionsAsOneEdit() {
        #expect(OptionParser.editDistance("rcp", "rpc") == 1)
        #expect(OptionParser.editDistance("kitten", "sitting") == 3)
        #expect(OptionParser.editDistance("", "abc") == 3)
    }
}
