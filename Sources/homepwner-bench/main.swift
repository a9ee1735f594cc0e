// homepwner-bench: benchmarks run by ops/bench; each prints a Markdown table with its baseline.
import Foundation

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "rpc":
    await RPCBenchmark.run(Array(arguments.dropFirst()))
case nil, "-h", "--help":
    print("""
        USAGE: homepwner-bench BENCHMARK [options]

        BENCHMARKS:
          rpc   Health/Check round trips (1 and 32 in flight) next to a bare libzmq ROUTER/DEALER echo
                options: --seconds S (per variant, split into 5 interleaved rounds; default 5)
        """)
default:
    FileHandle.standardError.write(Data("homepwner-bench: unknown benchmark '\(arguments[0])' (see --help)\n".utf8))
    exit(2)
}
