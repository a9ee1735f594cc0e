import Testing
@testable import Runtime

/// The flags every worker takes, and what they refuse.
@Suite struct WorkerConfigurationTests {
    static func parse(_ arguments: [String], environment: [String: String] = [:]) throws -> WorkerConfiguration {
        let parser = OptionParser(
            command: "thumbnail-worker", summary: "s", options: WorkerConfiguration.options(healthEnv: "HEALTH", healthDefault: "tcp://127.0.0.1:0", memoryBytesPerJob: 64 << 20))
        return try WorkerConfiguration(try parser.parse(arguments, environment: environment))
    }

    @Test func theMemoryBudgetIsSoMuchPerJobAtOnceUnlessGivenByFlagOrVariable() throws {
        let defaults = try Self.parse(["--concurrency", "3"])
        #expect(defaults.concurrency == 3 && defaults.memoryBytes(perJob: 64 << 20) == 3 * 64 << 20)
        #expect(try Self.parse(["--concurrency", "3", "--memory-mb", "500"]).memoryBytes(perJob: 64 << 20) == 500 << 20)
        #expect(try Self.parse([], environment: ["HOMEPWNER_WORKER_MEMORY_MB": "96"]).memoryBytes(perJob: 64 << 20) == 96 << 20)
        #expect(try Self.parse([]).memoryBytes(perJob: 64 << 20) == WorkerConfiguration.defaultConcurrency * 64 << 20)
    }

    @Test func outOfRangeValuesAreRefusedNamingTheFlagAndTheRange() throws {
        for (flag, value, range) in [
            ("--memory-mb", "-1", "1048576"), ("--concurrency", "257", "256"), ("--lease-ms", "10", "3600000"), ("--max-job-ms", "999", "86400000"),
        ] {
            var message = ""
            do { _ = try Self.parse([flag, value]) } catch { message = "\(error)" }
            #expect(message.contains(flag) && message.contains(value) && message.contains(range), "\(message)")
        }
    }

    @Test func aJobMayRunHalfAnHourUnlessGivenByFlagOrVariable() throws {
        #expect(try Self.parse([]).maxJobMilliseconds == 1_800_000)
        #expect(try Self.parse(["--max-job-ms", "2000"]).maxJobMilliseconds == 2000)
        #expect(try Self.parse([], environment: ["HOMEPWNER_WORKER_MAX_JOB_MS": "60000"]).maxJobMilliseconds == 60_000)
    }
}
