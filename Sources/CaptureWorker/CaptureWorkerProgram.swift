import Capture
import Media
import RPC
import Runtime
import WorkerRuntime

extension ServiceProgram {
    /// capture-worker: what its executable, `homepwner capture-worker` and a link of that name run.
    public static let captureWorker = ServiceProgram(
        command: "capture-worker",
        summary: "Takes capture jobs: obtains, validates and edits photos and videos, stores and attaches them.",
        options: CaptureWorkerHost.options,
        metricsEnvironment: EnvironmentNames.captureWorkerMetrics
    ) { options, context, logger in
        try CaptureWorkerHost.make(
            try WorkerConfiguration(options), sources: try CaptureSources(options), background: try CaptureWorkerHost.background(options),
            decodeOptions: try DecodeLimitOption.decodeOptions(options), context: context, logger: logger)
    }
}
