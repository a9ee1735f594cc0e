// homepwner-bench: benchmarks run by ops/bench; each prints a Markdown table with its baseline.
import Foundation
import Runtime

// The malloc settings every Homepwner process runs with (ProcessRunner): the services measured
// here run in this process. The baselines run in it too, so they get the same settings.
MallocTuning.forLargeMessages()
let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "rpc":
    await RPCBenchmark.run(Array(arguments.dropFirst()))
case "items":
    await ItemsBenchmark.run(Array(arguments.dropFirst()))
case "images":
    await ImagesBenchmark.run(Array(arguments.dropFirst()))
case "queue":
    await QueueBenchmark.run(Array(arguments.dropFirst()))
case "thumbs":
    await ThumbsBenchmark.run(Array(arguments.dropFirst()))
case "sharpness":
    await SharpnessBenchmark.run(Array(arguments.dropFirst()))
case "capture":
    await CaptureBenchmark.run(Array(arguments.dropFirst()))
case "load":
    await LoadBenchmark.run(Array(arguments.dropFirst()))
case "report":
    await ReportBenchmark.run(Array(arguments.dropFirst()))
case "backup":
    await BackupBenchmark.run(Array(arguments.dropFirst()))
case nil, "-h", "--help":
    print("""
        USAGE: homepwner-bench BENCHMARK [options]

        BENCHMARKS:
          rpc   Health/Check round trips (1 and 32 in flight), without and with CURVE, next to a bare libzmq ROUTER/DEALER echo
                options: --seconds S (per variant, split into 5 interleaved rounds; default 5)
          items  item creates (durable), get and list at 100,000 items vs the same statements on bare SQLite
          images put/get throughput for 100 KB, 2 MB, 20 MB blobs vs raw fsynced file writes and reads
                 and a bare ZeroMQ transfer; options: --rounds N (default 3), --size 100KB|2MB|20MB (one
                 size only), --shared-context (client and service on one libzmq context; by default
                 the client side has its own, as another process would), --profile VARIANT [--bytes N];
                 --renditions [--rounds N] [--source-mb 200] [--count 32]: 1 KB PutImage latency alone and
                 while --count GetRendition cache misses of a --source-mb MB JPEG render
          backup homepwner backup of --gb G (2) GB of photos vs tar of the data folders, an incremental one after 1%
                 new photos, and backup verify vs sha256sum; --rounds N (3)
          report a claim PDF of --items N (10,000) items with --photos P (2) photos each, written by the homepwner
                 executable, vs GetRendition of every photo it embeds (4 in flight), --rounds N (3) alternated; its peak RSS
          queue  no-op jobs through Lease/Complete over RPC (durable), 1 and --workers N (default 4) workers,
                 then with --done N (default 1,000,000) DONE rows, vs the same transactions on bare SQLite;
                 and with --max-jobs N (default 16) per Lease; options: --seconds S (per round, default 3),
                 --rounds N (default 3)
          thumbs the Thumbnailer (one and two threads) vs a bare C loop over libjpeg-turbo and Pillow (draft)
                 on Debian's wallpapers (ops/thumbs/prepare), then PNG and HEIC originals vs bare libspng and
                 libheif C loops; options: --rounds N (default 3, alternated), --sizes 64,256,1024,
                 --quality 80, --formats-only (the PNG and HEIC rows alone)
          sharpness each thumbnail (FIT --sizes 64,256,1024 at --quality 80) of Tests/Fixtures' photos and the wallpapers
                 (ops/thumbs/prepare) scored by SSIM on luma against a Lanczos-3 resize of the full-size upright
                 original: min, p5, median and bytes per size, the worst 5; --repository-only (no wallpapers);
                 --save DIR --only TEXT writes the thumbnails and references of matching files (ops/thumbs/crosscheck.py)
          capture a 12-megapixel photo captured with a square edit end to end (the three processes), one and
                 two workers, vs a bare C loop over libjpeg-turbo (ops/capture/prepare); options: --rounds N
                 (default 3), --captures N (a round, default 24)
          load   a soak: the four executables as processes, --clients N (default 64) clients of mixed traffic
                 (items, 16 MiB bodies, renditions, captures, thumbnail batches, Health) for --minutes M
                 (default 10), then --overload-seconds S (default 30) of overload, image-service's cache
                 budget --cache-mb M (default 256; 0: the service's default); p50/p99 per method, RSS and
                 descriptors every 10 s; fails on a hang, a RESOURCE_EXHAUSTED without retry_after_ms, a process
                 that ended, or RSS or descriptors that grew after warm-up; --json for JSON
        """)
default:
    FileHandle.standardError.write(Data("homepwner-bench: unknown benchmark '\(arguments[0])' (see --help)\n".utf8))
    exit(2)
}
