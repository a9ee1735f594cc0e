import Locking
import Testing
@testable import Runtime

@Suite("Logger")
struct LoggerTests {
    /// 2026-11-29T15:47:29.123Z
    static let instant: Int64 = 1_795_967_249_123

    func makeLogger(level: LogLevel = .info) -> (Logger, LogCollector) {
        let collector = LogCollector()
        let logger = Logger(
            label: "item-service",
            level: level,
            sink: .collecting(collector),
            clock: ManualClock(milliseconds: Self.instant)
        )
        return (logger, collector)
    }

    @Test func lineHasTimestampLevelLabelMessageAndMetadataSortedByKey() {
        let (logger, collector) = makeLogger()
        logger.info("listening", ["rpc": "tcp://127.0.0.1:5551", "events": "tcp://127.0.0.1:5561"])
        #expect(collector.lines == [
            "2026-11-29T15:47:29.123Z info item-service: listening events=tcp://127.0.0.1:5561 rpc=tcp://127.0.0.1:5551"
        ])
    }

    @Test func messagesBelowTheLevelAreDroppedWithoutEvaluatingThem() {
        let (logger, collector) = makeLogger(level: .warning)
        let evaluations = Locked(0)
        func expensive(_ text: String) -> String {
            evaluations.withLock { $0 += 1 }
            return text
        }
        logger.trace(expensive("t"))
        logger.debug(expensive("d"))
        logger.info(expensive("i"))
        logger.notice(expensive("n"))
        logger.warning(expensive("w"))
        logger.error(expensive("e"))
        logger.critical(expensive("c"))
        #expect(evaluations.withLock { $0 } == 3)
        #expect(collector.lines.map { $0.split(separator: " ")[1] } == ["warning", "error", "critical"])
    }

    @Test func changingLevelTakesEffect() {
        var (logger, collector) = makeLogger()
        logger.debug("hidden")
        logger.level = .debug
        logger.debug("shown")
        #expect(collector.lines.count == 1)
        #expect(collector.lines.first?.hasSuffix("debug item-service: shown") == true)
    }

    @Test func valuesWithSpacesQuotesOrEqualsAreQuotedAndEscaped() {
        let (logger, collector) = makeLogger()
        logger.info("saved", ["path": "/tmp/my photo.jpg", "note": #"say "hi""#, "empty": "", "plain": "a/b:c", "eq": "a=b"])
        #expect(collector.lines == [
            #"2026-11-29T15:47:29.123Z info item-service: saved empty="" eq="a=b" note="say \"hi\"" path="/tmp/my photo.jpg" plain=a/b:c"#
        ])
    }

    @Test func newlinesInMessageAndValuesAreEscapedSoEachCallIsOneLine() {
        let (logger, collector) = makeLogger()
        logger.error("first\nsecond", ["error": "line1\nline2"])
        #expect(collector.lines == [
            #"2026-11-29T15:47:29.123Z error item-service: first\nsecond error="line1\nline2""#
        ])
    }

    @Test func contextFromWithIsAddedAndPerCallMetadataWins() {
        let (base, collector) = makeLogger()
        let logger = base.with(["request": "r1", "service": "item"]).with(["request": "r2"])
        logger.info("handled", ["service": "override", "ms": "3"])
        base.info("untouched")
        #expect(collector.lines == [
            "2026-11-29T15:47:29.123Z info item-service: handled ms=3 request=r2 service=override",
            "2026-11-29T15:47:29.123Z info item-service: untouched",
        ])
    }

    @Test func timestampComesFromTheInjectedClock() {
        let collector = LogCollector()
        let clock = ManualClock(milliseconds: Self.instant)
        let logger = Logger(label: "x", sink: .collecting(collector), clock: clock)
        clock.advance(by: 1_877)
        logger.info("later")
        #expect(collector.lines == ["2026-11-29T15:47:31.000Z info x: later"])
    }

    @Test(arguments: [
        (Int64(0), "1970-01-01T00:00:00.000Z"),
        (Int64(-1), "1969-12-31T23:59:59.999Z"),
        (Int64(1_709_251_199_999), "2024-02-29T23:59:59.999Z"),
        (Int64(951_868_800_000), "2000-03-01T00:00:00.000Z"),
    ])
    func timestampFormatsUTCWithMilliseconds(milliseconds: Int64, expected: String) {
        #expect(Logger.timestamp(milliseconds: milliseconds) == expected)
    }

    @Test func systemClockIsNearTheCurrentTime() {
        // 2025-01-01 .. 2100-01-01: catches unit errors (seconds vs milliseconds).
        let now = SystemClock().nowMilliseconds()
        #expect(now > 1_735_689_600_000 && now < 4_102_444_800_000)
    }

    @Test func logLevelParsesNamesCaseInsensitivelyAndOrdersBySeverity() {
        #expect(LogLevel(string: "DEBUG") == .debug)
        #expect(LogLevel(string: "Warning") == .warning)
        #expect(LogLevel(string: "verbose") == nil)
        #expect(LogLevel.allCases == [.trace, .debug, .info, .notice, .warning, .error, .critical])
        #expect(LogLevel.allCases.sorted() == LogLevel.allCases)
        #expect(LogLevel.trace < .critical && !(LogLevel.error < .warning))
    }
}
