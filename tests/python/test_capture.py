"""Capture over the wire (docs/protocol.md section 15), written from the protocol doc: a client
here asks item-service for captures; the capture-worker executable does them."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from conftest import _executable, _start, _stop, free_port
from homepwner_client import Client, RpcError

CAPTURE = "/homepwner.v1.CaptureService/"
ITEMS = "/homepwner.v1.ItemService/"
REPO_ROOT = Path(__file__).resolve().parents[2]
# The same scene with EXIF orientation 1 (MIT licence: Tests/Fixtures/exif-orientation/LICENSE).
LANDSCAPE = REPO_ROOT / "Tests" / "Fixtures" / "exif-orientation" / "Landscape_1.jpg"


@pytest.fixture
def suite(pb, zmq_context, tmp_path_factory):
    """image-service, item-service and capture-worker, the last two with a photo library."""
    import subprocess

    library = tmp_path_factory.mktemp("library")
    (library / "trip").mkdir()
    shutil.copy(LANDSCAPE, library / "trip" / "lamp.jpg")
    images = _start("image-service", [], pb, zmq_context, tmp_path_factory)
    items = _start("item-service", ["--image-service", images.rpc, "--library", str(library)], pb, zmq_context,
                   tmp_path_factory)
    health = f"tcp://127.0.0.1:{free_port()}"
    worker = subprocess.Popen([str(_executable("capture-worker")), "--rpc", health, "--item-service", items.rpc,
                               "--image-service", images.rpc, "--library", str(library)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with Client(items.rpc, pb, context=zmq_context) as client:
        yield client
    worker.terminate()
    assert worker.wait(timeout=10) == 0
    _stop("item-service", items)
    _stop("image-service", images)


def finished(client, pb, job_id: str):
    deadline = time.monotonic() + 60
    while True:
        job = client.call(CAPTURE + "GetCaptureJob", pb.capture.GetCaptureJobRequest(job_id=job_id),
                          pb.capture.GetCaptureJobResponse).job
        if job.state in (pb.jobs.DONE, pb.jobs.DEAD):
            return job
        assert time.monotonic() < deadline, f"capture job {job_id} still {job.state}"
        time.sleep(0.05)


def test_a_python_client_captures_an_upload_and_a_library_photo_with_an_edit(suite, pb):
    client = suite
    sources = client.call(CAPTURE + "ListSources", pb.capture.ListSourcesRequest(), pb.capture.ListSourcesResponse)
    assert [(s.type, s.available) for s in sources.sources] == [
        (pb.capture.UPLOAD, True), (pb.capture.LIBRARY, True), (pb.capture.RECENT, True), (pb.capture.CAMERA, False)]
    item = client.call(ITEMS + "CreateItem", pb.items.CreateItemRequest(name="Lamp"), pb.items.Item)

    queued = client.call(CAPTURE + "Capture", pb.capture.CaptureRequest(
        item_key=item.key, source=pb.capture.UPLOAD, data=LANDSCAPE.read_bytes()), pb.capture.CaptureResponse).job
    assert queued.state == pb.jobs.QUEUED
    job = finished(client, pb, queued.job_id)
    assert job.state == pb.jobs.DONE and job.original_key and not job.duplicate, job

    edit = pb.capture.Edit(crop_x=100, crop_y=100, crop_width=500, crop_height=300, shape=pb.capture.CIRCLE)
    queued = client.call(CAPTURE + "Capture", pb.capture.CaptureRequest(
        item_key=item.key, source=pb.capture.LIBRARY, source_path="trip/lamp.jpg", edit=edit, make_primary=True),
        pb.capture.CaptureResponse).job
    job2 = finished(client, pb, queued.job_id)
    # The same bytes again: the original is that photo; the edit is new.
    assert job2.state == pb.jobs.DONE and job2.duplicate and job2.original_key == job.original_key and job2.edited_key
    got = client.call(ITEMS + "GetItem", pb.items.GetItemRequest(key=item.key), pb.items.Item)
    assert list(got.photo_keys) == [job.original_key, job2.edited_key] and got.primary_photo_key == job2.edited_key


def test_refusals_have_the_documented_codes(suite, pb):
    client = suite
    item = client.call(ITEMS + "CreateItem", pb.items.CreateItemRequest(name="Chair"), pb.items.Item)
    for request, code in [
        (pb.capture.CaptureRequest(item_key=item.key, source=pb.capture.LIBRARY, source_path="../etc/passwd"), 3),
        (pb.capture.CaptureRequest(item_key=item.key, source=pb.capture.CAMERA), 9),
        (pb.capture.CaptureRequest(item_key="00000000-0000-4000-8000-000000000000", source=pb.capture.UPLOAD, data=b"x"), 5),
        (pb.capture.CaptureRequest(item_key=item.key, source=pb.capture.UPLOAD, data=b"x",
                                   edit=pb.capture.Edit(scale=float("nan"))), 3),
    ]:
        with pytest.raises(RpcError) as refused:
            client.call(CAPTURE + "Capture", request, pb.capture.CaptureResponse)
        assert refused.value.code == code, refused.value
    # Bytes that are no photo: the job fails with code 3 in error_code.
    queued = client.call(CAPTURE + "Capture", pb.capture.CaptureRequest(
        item_key=item.key, source=pb.capture.UPLOAD, data=b"GIF89a not a jpeg"), pb.capture.CaptureResponse).job
    job = finished(client, pb, queued.job_id)
    assert job.state == pb.jobs.DEAD and job.error_code == 3 and job.error.startswith("INVALID_ARGUMENT (3): "), job
