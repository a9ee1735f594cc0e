"""Worker keys from outside (docs/protocol.md §16, "Roles"): each worker kind works its own
queue, and a worker key can neither delete nor forge a photo, nor attach one no capture job
it holds stored. Real image-service and item-service processes with CURVE, called by pyzmq.
"""
import hashlib
import itertools
import os
import subprocess
import time
import uuid

import zmq

from conftest import REPO_ROOT, _executable, free_port
from test_curve import _curve_socket, _homepwner

PHOTO = (REPO_ROOT / "Tests" / "Fixtures" / "pillow" / "exif_gps.jpg").read_bytes()
PERMISSION_DENIED = 7


def _job_key(job_id: str, created_at_ms: int, role: str) -> str:
    """A capture job's key (docs/protocol.md §16): a version-8 UUID named by the job."""
    digest = bytearray(hashlib.sha256(f"homepwner capture capture {job_id} {created_at_ms} {role}".encode()).digest()[:16])
    digest[6] = digest[6] & 0x0F | 0x80
    digest[8] = digest[8] & 0x3F | 0x80
    return str(uuid.UUID(bytes=bytes(digest)))


def test_worker_keys_are_bound_to_their_queue_and_their_jobs(pb, tmp_path):
    keys = tmp_path / "keys"
    _homepwner("keys", "init", str(keys))
    allowed = keys / "allowed_keys"
    # `worker` (both kinds) is a role for keys made before the kinds had their own; `keys init`
    # makes one key per kind now, so the test makes the `worker` key itself.
    for name, role in (("thumbs", "thumbnail-worker"), ("capture", "capture-worker"), ("worker", "worker")):
        _homepwner("keys", "gen", name, "--dir", str(keys))
        _homepwner("keys", "allow", role, str(keys / f"{name}.key"), "--file", str(allowed))
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOMEPWNER_")}
    curve = ["--server-secret-key", str(keys / "server.key_secret"), "--allowed-keys", str(allowed)]
    images_rpc, items_rpc = f"tcp://127.0.0.1:{free_port()}", f"tcp://127.0.0.1:{free_port()}"
    logs = {name: open(tmp_path / f"{name}.log", "wb") for name in ("image", "item")}
    processes = [
        subprocess.Popen(
            [str(_executable("image-service")), "--rpc", images_rpc, "--events", f"tcp://127.0.0.1:{free_port()}",
             "--data-dir", str(tmp_path / "data"), *curve], stdout=logs["image"], stderr=subprocess.STDOUT, env=env),
        subprocess.Popen(
            [str(_executable("item-service")), "--rpc", items_rpc, "--events", f"tcp://127.0.0.1:{free_port()}",
             "--data-dir", str(tmp_path / "data"), "--image-service", images_rpc,
             *curve],
            stdout=logs["item"], stderr=subprocess.STDOUT, env=env),
    ]
    context = zmq.Context()
    sockets = {}
    request_ids = itertools.count(1)

    def call(name: str, endpoint: str, method: str, request, response_type=None, wait_s: float = 15):
        key = (name, endpoint)
        if key not in sockets:
            sockets[key] = _curve_socket(context, zmq.DEALER, keys, name)
            sockets[key].connect(endpoint)
        socket = sockets[key]
        header = pb.rpc.RequestHeader(method=method, request_id=next(request_ids), timeout_ms=5000)
        socket.send_multipart([b"", header.SerializeToString(), request.SerializeToString()])
        assert socket.poll(int(wait_s * 1000), zmq.POLLIN), f"no reply to {method} by {name}:\n" + "".join(
            (tmp_path / f"{n}.log").read_text() for n in logs)
        frames = socket.recv_multipart()
        reply = pb.rpc.ResponseHeader.FromString(frames[1])
        body = response_type.FromString(frames[2]) if response_type and reply.code == 0 else None
        return reply, body

    def denied(reply, *words):
        assert reply.code == PERMISSION_DENIED, f"{reply.code}: {reply.message}"
        for word in words:
            assert word in reply.message, reply.message

    images, items, jobs = "/homepwner.v1.ImageService/", "/homepwner.v1.ItemService/", "/homepwner.v1.JobQueue/"
    try:
        # The services start (the admin's first call waits for them).
        deadline = time.monotonic() + 20
        while True:
            reply, item = call("admin", items_rpc, items + "CreateItem", pb.items.CreateItemRequest(name="Camera"), pb.items.Item)
            if reply.code == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert reply.code == 0, reply.message
        reply, photo = call("admin", images_rpc, images + "PutImage",
                            pb.images.PutImageRequest(owner_key=item.key, data=PHOTO), pb.images.ImageInfo)
        assert reply.code == 0, reply.message

        # Each kind of worker works its own queue only.
        reply, leased = call("thumbs", images_rpc, jobs + "Lease", pb.jobs.LeaseRequest(queue="thumbnails", max_jobs=1),
                             pb.jobs.LeaseResponse)
        assert reply.code == 0, reply.message
        denied(call("capture", images_rpc, jobs + "Lease", pb.jobs.LeaseRequest(queue="thumbnails", max_jobs=1))[0],
               "queue thumbnails")
        denied(call("thumbs", items_rpc, jobs + "Lease", pb.jobs.LeaseRequest(queue="capture", max_jobs=1))[0],
               "queue capture")
        # A thumbnail worker stores and deletes nothing itself.
        denied(call("thumbs", images_rpc, images + "PutImage", pb.images.PutImageRequest(owner_key=item.key, data=PHOTO))[0])
        denied(call("thumbs", images_rpc, images + "DeleteImage", pb.images.DeleteImageRequest(key=photo.key))[0])

        # The reproduction of issue 27: a worker key's DeleteImage of an admin's photo.
        for name in ("worker", "capture"):
            denied(call(name, images_rpc, images + "DeleteImage", pb.images.DeleteImageRequest(key=photo.key))[0],
                   "capture job")
            # A thumbnail forged for the admin's photo, and a photo under a key of its choosing.
            denied(call(name, images_rpc, images + "PutImage", pb.images.PutImageRequest(
                owner_key=item.key, data=PHOTO, kind=pb.images.THUMBNAIL, parent_key=photo.key))[0], "thumbnail")
            denied(call(name, images_rpc, images + "PutImage", pb.images.PutImageRequest(
                owner_key=item.key, data=PHOTO, key=str(uuid.uuid4())))[0], "named by a capture job")
            denied(call(name, images_rpc, images + "BeginUpload", pb.images.BeginUploadRequest(
                owner_key=item.key, total_size=len(PHOTO), content_type="image/jpeg"))[0], "no key was given")
        reply, _ = call("admin", images_rpc, images + "StatImage", pb.images.StatImageRequest(key=photo.key))
        assert reply.code == 0, "the admin's photo is gone: " + reply.message

        # Attach: a capture worker attaches only what a capture job it holds stored.
        reply, other = call("admin", items_rpc, items + "CreateItem", pb.items.CreateItemRequest(name="Lamp"), pb.items.Item)
        assert reply.code == 0
        denied(call("capture", items_rpc, items + "AttachPhoto",
                    pb.items.AttachPhotoRequest(item_key=other.key, image_key=photo.key))[0], "no capture job leased now")
        reply, _ = call("admin", items_rpc, "/homepwner.v1.CaptureService/Capture",
                        pb.capture.CaptureRequest(item_key=other.key, source=pb.capture.UPLOAD, data=PHOTO))
        assert reply.code == 0, reply.message
        reply, leased = call("capture", items_rpc, jobs + "Lease",
                             pb.jobs.LeaseRequest(queue="capture", max_jobs=1, wait_ms=3000), pb.jobs.LeaseResponse)
        assert reply.code == 0 and len(leased.jobs) == 1, reply.message
        job = leased.jobs[0]
        own = _job_key(job.job_id, job.created_at_ms, "original")
        # Held: the job's own key is stored and attached; the admin's photo still is not.
        reply, stored = call("capture", images_rpc, images + "PutImage",
                             pb.images.PutImageRequest(owner_key=other.key, data=PHOTO, key=own), pb.images.ImageInfo)
        assert reply.code == 0 and stored.key == own, reply.message
        reply, attached = call("capture", items_rpc, items + "AttachPhoto",
                               pb.items.AttachPhotoRequest(item_key=other.key, image_key=own), pb.items.Item)
        assert reply.code == 0 and own in attached.photo_keys, reply.message
        denied(call("capture", items_rpc, items + "AttachPhoto",
                    pb.items.AttachPhotoRequest(item_key=other.key, image_key=photo.key))[0])
        # Once the job is finished, its keys are no longer the worker's to change.
        reply, _ = call("capture", items_rpc, jobs + "Fail", pb.jobs.FailRequest(
            queue="capture", job_id=job.job_id, lease_id=job.lease_id, error="test", permanent=True))
        assert reply.code == 0, reply.message
        denied(call("capture", items_rpc, items + "DetachPhoto",
                    pb.items.DetachPhotoRequest(item_key=other.key, image_key=own))[0])
        reply, _ = call("admin", items_rpc, items + "DetachPhoto", pb.items.DetachPhotoRequest(item_key=other.key, image_key=own))
        assert reply.code == 0, reply.message
        assert all(process.poll() is None for process in processes)
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=20)
        for log in logs.values():
            log.close()
        for socket in sockets.values():
            socket.close()
        context.term()
