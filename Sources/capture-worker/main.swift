import Capture
import CaptureWorker
import RPC
import Runtime

await ProcessRunner.run(
    command: "capture-worker",
    summary: "Takes capture jobs: obtains, validates and edits photos and videos, stores and attaches them.",
    options: CaptureWorkerHost.options,
    metricsEnvironment: EnvironmentNames.captureWorkerMetrics
) { options, context, logger in
    try CaptureWorkerHost.make(
        try WorkerConfiguration(options), sources: try CaptureSources(options), background: try CaptureWorkerHost.background(options),
        context: context, logger: logger)
}
