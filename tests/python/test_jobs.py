"""The `thumbnails` job queue over the wire (docs/protocol.md sections 11 and 14): a worker
written here leases, completes and fails jobs; the thumbnail-worker executable does the rest."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import _executable, _start, _stop
from homepwner_client import Client, RpcError

JOBS = "/homepwner.v1.JobQueue/"
IMAGES = "/homepwner.v1.ImageService/"
REPO_ROOT = Path(__file__).resolve().parents[2]
# 128×128 (Pillow's test image, HPND licence: Tests/Fixtures/pillow/LICENSE).
HOPPER = REPO_ROOT / "Tests" / "Fixtures" / "pillow" / "hopper.jpg"


@pytest.fixture
def images(pb, zmq_context, tmp_path_factory):
    """An image-service of its own per test: its queue starts empty."""
    service = _start("image-service", [], pb, zmq_context, tmp_path_factory)
    with Client(service.rpc, pb, context=zmq_context) as client:
        yield service, client
    _stop("image-service", service)


def jobs_call(client, pb, method, request, timeout_ms=5000):
    response = {
        "Lease": pb.jobs.LeaseResponse, "Complete": pb.jobs.CompleteResponse, "Fail": pb.jobs.FailResponse,
        "GetJob": pb.jobs.Job, "ListJobs": pb.jobs.ListJobsResponse, "GetBatch": pb.jobs.JobBatch,
        "Stats": pb.jobs.JobStatsResponse,
    }[method]
    return client.call(JOBS + method, request, response, timeout_ms=timeout_ms)


def put(client, pb, data: bytes, owner="item-1"):
    return client.call(IMAGES + "PutImage", pb.images.PutImageRequest(owner_key=owner, data=data), pb.images.ImageInfo)


def thumbnails_of(client, pb, key: str):
    listed = client.call(IMAGES + "ListImages", pb.images.ListImagesRequest(kind=pb.images.THUMBNAIL, page_size=1000),
                         pb.images.ListImagesResponse)
    return [image for image in listed.images if image.parent_key == key]


def lease(client, pb, worker="python-worker", lease_ms=600_000):
    reply = jobs_call(client, pb, "Lease", pb.jobs.LeaseRequest(queue="thumbnails", worker_id=worker, wait_ms=3000,
                                                                lease_ms=lease_ms), timeout_ms=10000)
    assert len(reply.jobs) == 1, reply
    return reply.jobs[0]


def test_a_worker_in_python_completes_a_thumbnail_job_and_a_stale_lease_stores_nothing(images, pb):
    _, client = images
    hopper = HOPPER.read_bytes()
    original = put(client, pb, hopper)
    first = lease(client, pb, worker="first")
    payload = pb.images.ThumbnailJob.FromString(first.payload)
    assert payload.image_key == original.key and list(payload.sizes) == [64, 256, 1024]
    # The first worker hands it back; a second takes it.
    jobs_call(client, pb, "Fail", pb.jobs.FailRequest(queue="thumbnails", job_id=first.job_id, lease_id=first.lease_id,
                                                      give_back=True))
    second = lease(client, pb, worker="second")
    assert second.job_id == first.job_id and second.lease_id != first.lease_id

    # 128×128 fits the 256 and 1024 boxes as it is (thumbnails are never enlarged).
    result = pb.images.ThumbnailResult(thumbnails=[
        pb.images.Thumbnail(size=256, data=hopper), pb.images.Thumbnail(size=1024, data=hopper)])
    done = pb.jobs.CompleteRequest(queue="thumbnails", job_id=second.job_id, lease_id=second.lease_id,
                                   result=result.SerializeToString())
    jobs_call(client, pb, "Complete", done)
    stored = thumbnails_of(client, pb, original.key)
    assert sorted((t.width, t.height) for t in stored) == [(128, 128), (128, 128)]
    assert all(t.owner_key == "item-1" and t.kind == pb.images.THUMBNAIL for t in stored)

    job = jobs_call(client, pb, "GetJob", pb.jobs.GetJobRequest(queue="thumbnails", job_id=second.job_id))
    assert job.state == pb.jobs.DONE and job.attempts == 1
    kept = pb.images.ThumbnailResult.FromString(job.result)
    assert {t.key for t in kept.thumbnails} == {t.key for t in stored} and all(t.data == b"" for t in kept.thumbnails)

    # The first worker's late completion: 9, and nothing more is stored.
    late = pb.jobs.CompleteRequest(queue="thumbnails", job_id=first.job_id, lease_id=first.lease_id,
                                   result=result.SerializeToString())
    with pytest.raises(RpcError) as refused:
        jobs_call(client, pb, "Complete", late)
    assert refused.value.code == 9 and refused.value.message.endswith("this worker's result was not stored")
    # A repeat under the lease that completed it is answered again, storing nothing twice.
    jobs_call(client, pb, "Complete", done)
    assert len(thumbnails_of(client, pb, original.key)) == 2

    # A result that is not a JPEG of a size asked for: 3, naming it.
    put(client, pb, hopper, owner="item-2")
    third = lease(client, pb)
    bad = pb.images.ThumbnailResult(thumbnails=[pb.images.Thumbnail(size=100, data=hopper)])
    with pytest.raises(RpcError) as invalid:
        jobs_call(client, pb, "Complete", pb.jobs.CompleteRequest(
            queue="thumbnails", job_id=third.job_id, lease_id=third.lease_id, result=bad.SerializeToString()))
    assert invalid.value.code == 3 and "asked for sizes 64,256,1024" in invalid.value.message


def test_enqueue_thumbnails_answers_a_batch_whose_progress_can_be_read(images, pb):
    _, client = images
    hopper = HOPPER.read_bytes()
    keys = [put(client, pb, hopper, owner=f"item-{n}").key for n in range(3)]
    # The puts queued a job each (default sizes); a batch of other sizes makes new ones.
    reply = client.call(IMAGES + "EnqueueThumbnails", pb.images.EnqueueThumbnailsRequest(keys=keys, sizes=[32]),
                        pb.images.EnqueueThumbnailsResponse)
    assert (reply.enqueued, reply.already_pending, reply.already_done) == (3, 0, 0) and reply.batch_id
    batch = jobs_call(client, pb, "GetBatch", pb.jobs.GetBatchRequest(queue="thumbnails", batch_id=reply.batch_id))
    assert (batch.total, batch.done, batch.dead, batch.pending) == (3, 0, 0, 3)
    # Asked again while pending: the same jobs.
    again = client.call(IMAGES + "EnqueueThumbnails", pb.images.EnqueueThumbnailsRequest(keys=keys, sizes=[32]),
                        pb.images.EnqueueThumbnailsResponse)
    assert (again.enqueued, again.already_pending) == (0, 3)
    with pytest.raises(RpcError) as neither:
        client.call(IMAGES + "EnqueueThumbnails", pb.images.EnqueueThumbnailsRequest(),
                    pb.images.EnqueueThumbnailsResponse)
    assert neither.value.code == 3


def start_worker(name: str, image_rpc: str, tmp_path: Path, *extra: str) -> tuple[subprocess.Popen, Path]:
    log = tmp_path / f"{name}.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOMEPWNER_")}
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [str(_executable("thumbnail-worker")), "--rpc", f"ipc://{tmp_path}/{name}.sock", "--image-service", image_rpc,
             *extra], stdout=out, stderr=subprocess.STDOUT, env=env)
    return process, log


def wait_for(condition, seconds=60):
    end = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < end, "gave up waiting"
        time.sleep(0.05)


def test_the_thumbnail_worker_takes_the_job_a_dead_python_worker_held_and_stores_it_once(images, pb, tmp_path):
    service, client = images
    original = put(client, pb, HOPPER.read_bytes())
    # A worker that takes the job for a second and dies (never extends, never completes).
    dead = lease(client, pb, worker="python-worker-that-dies", lease_ms=1000)
    worker, log = start_worker("thumbnail-worker", service.rpc, tmp_path)
    try:
        def done():
            job = jobs_call(client, pb, "GetJob", pb.jobs.GetJobRequest(queue="thumbnails", job_id=dead.job_id))
            return job.state == pb.jobs.DONE
        wait_for(done)
        job = jobs_call(client, pb, "GetJob", pb.jobs.GetJobRequest(queue="thumbnails", job_id=dead.job_id))
        assert job.attempts == 2
        assert [(e.worker_id, e.message) for e in job.errors] == [("python-worker-that-dies", "lease expired")]
        assert job.worker_id.startswith("thumbnail-worker@")
        stored = sorted((t.width, t.height) for t in thumbnails_of(client, pb, original.key))
        assert stored == [(64, 64), (128, 128), (128, 128)]
        # GetRendition of a stored size is the stored thumbnail.
        rendition = client.call(IMAGES + "GetRendition", pb.images.GetRenditionRequest(key=original.key, width=64, height=64),
                                pb.images.GetRenditionResponse)
        assert rendition.info.kind == pb.images.THUMBNAIL and rendition.info.key != original.key
        assert rendition.source.key == original.key and rendition.source.kind == pb.images.ORIGINAL
    finally:
        worker.send_signal(signal.SIGTERM)
        code = worker.wait(timeout=20)
    assert code == 0, log.read_text(errors="replace")
