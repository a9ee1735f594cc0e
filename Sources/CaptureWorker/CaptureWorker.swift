// CaptureWorker
