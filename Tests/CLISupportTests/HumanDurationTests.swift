import CLISupport
import Testing

/// Durations as the CLI prints and reads them.
struct HumanDurationTests {
    @Test(arguments: [
        (0, "0 ms"), (999, "999 ms"), (1000, "1 s"), (59_999, "59 s"), (60_000, "1 min"), (150_000, "2 min"),
        (3_600_000, "1 h"), (129_600_000, "36 h"), (172_800_000, "2 d"), (-5, "0 ms"),
    ] as [(Int64, String)])
    func textIsWholeUnitsRoundedDown(_ milliseconds: Int64, _ text: String) {
        #expect(HumanDuration.text(milliseconds: milliseconds) == text)
    }

    @Test(arguments: [
        ("500ms", 500), ("90s", 90_000), ("10m", 600_000), ("10min", 600_000), ("2h", 7_200_000), ("7d", 604_800_000),
    ] as [(String, Int64)])
    func typedDurationsParse(_ typed: String, _ milliseconds: Int64) {
        #expect(HumanDuration.milliseconds(typed) == milliseconds)
    }

    @Test(arguments: ["", "10", "h", "1.5h", "-1h", "+1h", "2 h", "1w", "400d", "999999999999d", "99999999999999999999s"])
    func anythingElseIsRefused(_ typed: String) {
        #expect(HumanDuration.milliseconds(typed) == nil)
    }
}
