import Foundation
import Synchronization

/// Settings shared by the stateless workers, from flags and HOMEPWNER_* variables.
public struct WorkerConfiguration: Sendable {
    /// Where the worker answers Health/Check (use tcp://127.0.0.1:0 for any free port).
    public var healthEndpoint: String
    /// The item service's RPC endpoint.
    public var itemServiceEndpoint: String
    /// The image service's RPC endpoint.
    public var imageServiceEndpoint: String
    /// Jobs worked on at once (by default one per core: a thumbnail is CPU work).
    public var concurrency: Int
    /// The lease each job is taken with (0: the queue's default, 30 s); heartbeats extend it
    /// every third of it. A dead worker's jobs return to the queue within one lease.
    public var leaseMilliseconds: Int32
    /// What the jobs being worked on may hold at once by their own estimate, in bytes, as
    /// given (`--memory-mb`); nil: so much per job at once (`memoryBytes(perJob:)`).
    public var memoryBytesGiven: Int?
    /// The longest one job may run: past it, its heartbeats stop, it is cancelled and failed
    /// for good, naming the limit (a job that never ends would hold its lease for ever).
    public var maxJobMilliseconds: Int

    /// `maxJobMilliseconds` when not given: half an hour, past any camera's time limit (at most
    /// 10 minutes) and a 4 GiB movie's upload at a few MB/s.
    public static let defaultMaxJobMilliseconds = 1_800_000

    /// The memory budget as given, else `perJob` per job at once: each worker kind says what its
    /// jobs weigh (`--memory-mb`).
    public func memoryBytes(perJob: Int) -> Int { memoryBytesGiven ?? concurrency * perJob }

    /// A configuration.
    public init(
        healthEndpoint: String, itemServiceEndpoint: String = Defaults.itemRPC,
        imageServiceEndpoint: String = Defaults.imageRPC, concurrency: Int = WorkerConfiguration.defaultConcurrency,
        leaseMilliseconds: Int32 = 0, memoryBytes: Int? = nil, maxJobMilliseconds: Int = WorkerConfiguration.defaultMaxJobMilliseconds
    ) {
        self.leaseMilliseconds = leaseMilliseconds
        self.maxJobMilliseconds = maxJobMilliseconds
        self.memoryBytesGiven = memoryBytes
        self.healthEndpoint = healthEndpoint
        self.itemServiceEndpoint = itemServiceEndpoint
        self.imageServiceEndpoint = imageServiceEndpoint
        self.concurrency = concurrency
    }

    /// The flags of a worker executable whose health endpoint has the given variable and default,
    /// and whose jobs weigh `memoryBytesPerJob` each when `--memory-mb` is not given.
    public static func options(healthEnv: String, healthDefault: String, memoryBytesPerJob: Int) -> [OptionSpec] {
        [
            OptionSpec(name: "rpc", env: healthEnv, defaultValue: healthDefault,
                       help: "Health endpoint to bind (ROUTER); tcp://127.0.0.1:0 picks a free port", valueName: "ENDPOINT"),
            OptionSpec(name: "item-service", env: EnvironmentNames.itemRPC, defaultValue: Defaults.itemRPC,
                       help: "item service RPC endpoint", valueName: "ENDPOINT"),
            OptionSpec(name: "image-service", env: EnvironmentNames.imageRPC, defaultValue: Defaults.imageRPC,
                       help: "image service RPC endpoint", valueName: "ENDPOINT"),
            OptionSpec(name: "concurrency", env: EnvironmentNames.workerConcurrency, defaultValue: "0",
                       help: "jobs worked on at once; 0 = one per core", valueName: "N"),
            OptionSpec(name: "lease-ms", env: EnvironmentNames.workerLeaseMilliseconds, defaultValue: "0",
                       help: "the lease a job is taken with; 0 = the queue's (30000); heartbeats renew it", valueName: "MS"),
            OptionSpec(name: "memory-mb", env: EnvironmentNames.workerMemoryMegabytes, defaultValue: "0",
                       help: "what the jobs worked on may hold at once, by their estimate (a job over it runs alone); 0 = \(memoryBytesPerJob >> 20) per job at once",
                       valueName: "MB"),
            OptionSpec(name: "max-job-ms", env: EnvironmentNames.workerMaxJobMilliseconds, defaultValue: String(defaultMaxJobMilliseconds),
                       help: "the longest one job may run; past it, it is stopped and failed for good", valueName: "MS"),
        ]
    }

    /// Reads the parsed flags.
    public init(_ options: ParsedOptions) throws {
        var concurrency = try options.int("concurrency")
        guard (0...256).contains(concurrency) else {
            throw OptionError.invalidValue(option: "--concurrency", value: String(concurrency), reason: "must be 0 (one per core) to 256")
        }
        if concurrency == 0 { concurrency = Self.defaultConcurrency }
        let lease = try options.int("lease-ms")
        guard lease == 0 || (1000...3_600_000).contains(lease) else {
            throw OptionError.invalidValue(option: "--lease-ms", value: String(lease), reason: "must be 0 (the queue's) or 1000…3600000")
        }
        let memory = try options.int("memory-mb")
        guard (0...1_048_576).contains(memory) else {
            throw OptionError.invalidValue(option: "--memory-mb", value: String(memory), reason: "must be 0 (so much per job at once) to 1048576")
        }
        let maxJob = try options.int("max-job-ms")
        guard (1000...86_400_000).contains(maxJob) else {
            throw OptionError.invalidValue(option: "--max-job-ms", value: String(maxJob), reason: "must be 1000…86400000 (a day)")
        }
        self.init(
            healthEndpoint: try options.string("rpc"), itemServiceEndpoint: try options.string("item-service"),
            imageServiceEndpoint: try options.string("image-service"), concurrency: concurrency,
            leaseMilliseconds: Int32(lease), memoryBytes: memory == 0 ? nil : memory << 20, maxJobMilliseconds: maxJob)
    }

    /// One job per core this process may run on.
    public static var defaultConcurrency: Int { max(1, ProcessInfo.processInfo.activeProcessorCount) }

    /// A worker's name in leases and job errors: `<kind>@<host>:<pid>`, so an operator reading
    /// a dead job's history knows which machine and process each attempt ran on; a second
    /// worker of the same process (`homepwner up`, tests) gets `#2`, and so on.
    public static func workerID(_ kind: String) -> String {
        var name = [CChar](repeating: 0, count: 256)
        let host = gethostname(&name, name.count) == 0 ? String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "unknown"
        let number = workersMade.add(1, ordering: .relaxed).newValue
        return "\(kind)@\(host):\(getpid())" + (number > 1 ? "#\(number)" : "")
    }

    private static let workersMade = Atomic<Int>(0)
}
