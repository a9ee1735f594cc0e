"""Start-up recovery as docs/protocol.md ("Start-up recovery and Stats") describes it: an
images.db restored from an older copy never destroys the photos stored after that copy; they
are moved to quarantine and ImageService/Stats reports them."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import _executable, free_port
from homepwner_client import Client, NotSent
from test_images import call, jpeg, sha256  # noqa: F401  (jpeg is a fixture)

IMAGES = "/homepwner.v1.ImageService/"


class ImageService:
    """image-service on one data folder, started and stopped as often as a test likes."""

    def __init__(self, data: Path, pb, zmq_context):
        self.data, self.pb, self.zmq_context = data, pb, zmq_context
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.rpc = f"tcp://127.0.0.1:{free_port()}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("HOMEPWNER_")}
        self.log = open(self.data.parent / "image-service.log", "ab")
        self.process = subprocess.Popen(
            [str(_executable("image-service")), "--rpc", self.rpc, "--events", f"tcp://127.0.0.1:{free_port()}",
             "--data-dir", str(self.data)], stdout=self.log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + 15
        while True:
            assert self.process.poll() is None, f"image-service exited with {self.process.returncode}"
            try:
                with self.client() as probe:
                    probe.health_check(timeout_ms=500)
                return
            except (TimeoutError, NotSent):
                assert time.monotonic() < deadline, "image-service did not answer within 15 s"
                time.sleep(0.1)

    def client(self) -> Client:
        return Client(self.rpc, self.pb, context=self.zmq_context)

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        assert self.process.wait(timeout=10) == 0
        self.log.close()


def put(service: ImageService, data: bytes) -> str:
    request = service.pb.images.PutImageRequest(data=data)
    with service.client() as client:
        return call(client, service.pb, "PutImage", request).key


def stats(service: ImageService):
    with service.client() as client:
        return client.call(IMAGES + "Stats", service.pb.images.ImageStatsRequest(),
                           service.pb.images.ImageStatsResponse, timeout_ms=5000)


def test_an_older_images_db_restored_sends_the_newer_photos_to_quarantine_not_away(pb, zmq_context, tmp_path, jpeg):
    data = tmp_path / "data"
    service = ImageService(data, pb, zmq_context)
    service.start()
    older = put(service, jpeg)
    assert stats(service).quarantined_blobs == 0
    service.stop()
    # The operator's backup of the index, taken while the service was stopped.
    index = data / "images" / "images.db"
    backup = tmp_path / "images.db.backup"
    shutil.copy(index, backup)

    service.start()
    newer_bytes = jpeg + b"newer"  # bytes after EOI are kept with the image
    newer = put(service, newer_bytes)
    service.stop()

    # The backup restored: the index no longer knows the newer photo.
    for suffix in ("", "-wal", "-shm"):
        Path(str(index) + suffix).unlink(missing_ok=True)
    shutil.copy(backup, index)
    service.start()
    try:
        report = stats(service)
        assert report.quarantined_blobs == 1, report
        folder = Path(report.quarantine_folder)
        assert folder.is_relative_to(data / "images" / "quarantine"), report.quarantine_folder
        assert (folder / newer).read_bytes() == newer_bytes, "the newer photo was not kept byte for byte"
        with service.client() as client:
            got = call(client, pb, "GetImage", pb.images.GetImageRequest(key=older))
            assert got.data == jpeg and got.info.checksum == sha256(jpeg)
            with pytest.raises(Exception) as missing:
                call(client, pb, "GetImage", pb.images.GetImageRequest(key=newer))
            assert getattr(missing.value, "code", None) == 5, missing.value
    finally:
        service.stop()
