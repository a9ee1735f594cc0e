"""Chaos across processes (ops/chaos): the four executables as separate processes with CURVE on,
a seeded mixed workload that records what every call returned, SIGKILL of a random process at
random moments and its restart; at the end the queues drain and a checker compares the history
with what the services hold, then runs `homepwner fsck`.

Acknowledged means the call returned OK. A call that timed out or met a dead process is
"unknown": its effect may or may not be there, and the checker accepts either. Creates, puts
and captures carry client-chosen keys, so the workload retries them until acknowledged.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import zmq
import zmq.auth

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "python"))
from homepwner_client import Client, NotSent, RpcError, compile_protos  # noqa: E402

ITEMS = "/homepwner.v1.ItemService/"
IMAGES = "/homepwner.v1.ImageService/"
CAPTURE = "/homepwner.v1.CaptureService/"
JOBS = "/homepwner.v1.JobQueue/"
UNAVAILABLE, DEADLINE_EXCEEDED, ABORTED, NOT_FOUND = 14, 4, 10, 5
PROCESSES = ("image-service", "item-service", "capture-worker", "thumbnail-worker")
FIXTURES = ROOT / "Tests" / "Fixtures" / "exif-orientation"


class Unknown(Exception):
    """The call's outcome is not known (timeout, process gone)."""


class CurveClient(Client):
    """homepwner_client.Client on a CURVE socket with the admin key."""

    def __init__(self, endpoint, pb, keys: Path, context) -> None:  # noqa: D107
        import itertools
        self.pb, self.socket_type = pb, zmq.DEALER
        self.socket = context.socket(zmq.DEALER)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.setsockopt(zmq.IMMEDIATE, 1)
        public, secret = zmq.auth.load_certificate(str(keys / "admin.key_secret"))
        server, _ = zmq.auth.load_certificate(str(keys / "server.key"))
        self.socket.curve_publickey, self.socket.curve_secretkey, self.socket.curve_serverkey = public, secret, server
        self.socket.connect(endpoint)
        self._ids = itertools.count(1)
        self._early = {}


class Suite:
    """The four processes, their keys, data and logs under one folder."""

    def __init__(self, root: Path, bin_dir: Path) -> None:
        self.root, self.bin = root, bin_dir
        self.keys = root / "keys"
        self.library = root / "library"
        self.library.mkdir()
        for name in sorted(os.listdir(FIXTURES)):
            if name.endswith(".jpg"):
                shutil.copy(FIXTURES / name, self.library / name)
        subprocess.run([str(bin_dir / "homepwner"), "keys", "init", str(self.keys)], check=True,
                       stdout=subprocess.DEVNULL)
        ipc = lambda name: f"ipc://{root}/{name}"  # noqa: E731
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("HOMEPWNER_")}
        self.env.update({
            "HOMEPWNER_ITEM_RPC": ipc("item.rpc"), "HOMEPWNER_IMAGE_RPC": ipc("image.rpc"),
            "HOMEPWNER_ITEM_EVENTS": ipc("item.events"), "HOMEPWNER_IMAGE_EVENTS": ipc("image.events"),
            "HOMEPWNER_CAPTURE_WORKER_RPC": ipc("capture.health"),
            "HOMEPWNER_THUMBNAIL_WORKER_RPC": ipc("thumbnail.health"),
            "HOMEPWNER_ITEM_METRICS": "", "HOMEPWNER_IMAGE_METRICS": "",
            "HOMEPWNER_CAPTURE_WORKER_METRICS": "", "HOMEPWNER_THUMBNAIL_WORKER_METRICS": "",
            "HOMEPWNER_CAPTURE_LIBRARY": str(self.library),
            # A killed worker's jobs come back after one lease: keep it short.
            "HOMEPWNER_WORKER_LEASE_MS": "4000",
            "HOMEPWNER_LOG_LEVEL": "warning",
        })
        self.server_env = {"HOMEPWNER_SERVER_SECRET_KEY": str(self.keys / "server.key_secret"),
                           "HOMEPWNER_ALLOWED_KEYS": str(self.keys / "allowed_keys")}
        self.client_env = {"HOMEPWNER_CLIENT_SECRET_KEY": str(self.keys / "admin.key_secret"),
                           "HOMEPWNER_SERVER_KEY": str(self.keys / "server.key")}
        # Each worker with its own kind's key, as `keys init` makes them and compose gives them.
        self.worker_env = {kind: {"HOMEPWNER_CLIENT_SECRET_KEY": str(self.keys / f"{kind}.key_secret"),
                                  "HOMEPWNER_SERVER_KEY": str(self.keys / "server.key")}
                           for kind in ("capture-worker", "thumbnail-worker")}
        self.processes: dict[str, subprocess.Popen] = {}
        self.lock = threading.Lock()

    def start(self, name: str) -> None:
        env = dict(self.env)
        if name.endswith("service"):
            env.update(self.server_env, HOMEPWNER_DATA_DIR=str(self.root / name))
        else:
            env.update(self.worker_env[name])
        log = open(self.root / f"{name}.log", "ab")
        self.processes[name] = subprocess.Popen([str(self.bin / name)], env=env, stdout=log, stderr=subprocess.STDOUT,
                                                cwd=self.root)
        log.close()

    def kill(self, name: str) -> None:
        process = self.processes[name]
        process.send_signal(signal.SIGKILL)
        process.wait()

    def check_alive(self) -> list[str]:
        """Processes that exited on their own (not killed by us): a finding each."""
        return [f"{name} exited by itself with {p.returncode}" for name, p in self.processes.items()
                if p.poll() is not None]

    def stop_all(self) -> None:
        for name in reversed(PROCESSES):
            process = self.processes.get(name)
            if process and process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()

    def homepwner(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
        return subprocess.run([str(self.bin / "homepwner"), *args], env={**self.env, **self.client_env},
                              capture_output=True, text=True, timeout=timeout)


class Chaos:
    def __init__(self, suite: Suite, pb, seed: int, seconds: float, big_every: int) -> None:
        self.suite, self.pb, self.rng = suite, pb, random.Random(seed)
        self.seconds, self.big_every = seconds, big_every
        context = zmq.Context.instance()
        self.items = CurveClient(suite.env["HOMEPWNER_ITEM_RPC"], pb, suite.keys, context)
        self.images = CurveClient(suite.env["HOMEPWNER_IMAGE_RPC"], pb, suite.keys, context)
        self.calls: dict[str, dict[str, int]] = {}
        self.kills: list[tuple[float, str]] = []
        # The history: what was acknowledged.
        self.item_states: dict[str, list[tuple[str, int]]] = {}  # key -> acceptable (name, value)
        self.deleted: dict[str, bool] = {}  # key -> acknowledged (True) or unknown (False)
        self.photos: dict[str, dict] = {}  # image key -> {item, checksum, attached}
        self.captures: dict[str, str] = {}  # job id -> item key
        self.findings: list[str] = []
        self.jpegs = [p.read_bytes() for p in sorted(suite.library.glob("*.jpg"))]
        self.stop = threading.Event()
        self.started = time.monotonic()
        self.history = open(suite.root / "history.jsonl", "w")

    # -- calls --------------------------------------------------------------------------------

    def call(self, client, method: str, request, response_type, timeout_ms: int = 5000):
        """One call; Unknown when no answer came or the service was unavailable."""
        name = method.rsplit("/", 1)[1]
        counts = self.calls.setdefault(name, {"ok": 0, "refused": 0, "unknown": 0})
        started = time.monotonic() - self.started
        fields = {f.name: v for f, v in request.ListFields() if f.name != "data"}
        try:
            result = client.call(method, request, response_type, timeout_ms=timeout_ms)
        except (TimeoutError, NotSent) as error:
            counts["unknown"] += 1
            self.record(started, name, fields, "unknown", str(error))
            raise Unknown(str(error)) from error
        except RpcError as error:
            if error.code in (UNAVAILABLE, DEADLINE_EXCEEDED, ABORTED):
                counts["unknown"] += 1
                self.record(started, name, fields, "unknown", str(error))
                raise Unknown(str(error)) from error
            counts["refused"] += 1
            self.record(started, name, fields, "refused", str(error))
            raise
        counts["ok"] += 1
        self.record(started, name, fields, "ok", "")
        return result

    def record(self, started: float, name: str, fields: dict, outcome: str, detail: str) -> None:
        """One line of the history (history.jsonl in the folder): when, what, what came back."""
        line = {"t": round(started, 3), "end": round(time.monotonic() - self.started, 3), "call": name,
                "request": {k: (v if isinstance(v, (str, int, float, bool)) else str(v)) for k, v in fields.items()},
                "outcome": outcome}
        if detail:
            line["detail"] = detail
        self.history.write(json.dumps(line) + "\n")

    def until_acknowledged(self, client, method, request, response_type, timeout_ms=5000, limit_s=90):
        """Repeats a call that is safe to repeat (client-chosen key) until it is answered."""
        deadline = time.monotonic() + limit_s
        while True:
            try:
                return self.call(client, method, request, response_type, timeout_ms)
            except Unknown:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    # -- the workload -------------------------------------------------------------------------

    def live_items(self) -> list[str]:
        return [k for k in self.item_states if k not in self.deleted]

    def create(self) -> None:
        pb = self.pb
        key, name, value = str(uuid.UUID(int=self.rng.getrandbits(128), version=4)), f"thing {self.rng.randrange(10**6)}", self.rng.randrange(1000)
        self.until_acknowledged(self.items, ITEMS + "CreateItem",
                                pb.items.CreateItemRequest(key=key, name=name, value_in_dollars=value), pb.items.Item)
        self.item_states[key] = [(name, value)]

    def update(self, key: str) -> None:
        pb = self.pb
        name, value = f"renamed {self.rng.randrange(10**6)}", self.rng.randrange(1000)
        request = pb.items.UpdateItemRequest(key=key, update_mask=["name", "value_in_dollars"], name=name,
                                             value_in_dollars=value)
        try:
            self.call(self.items, ITEMS + "UpdateItem", request, pb.items.Item)
            self.item_states[key] = [(name, value)]
        except Unknown:
            self.item_states[key].append((name, value))

    def move(self) -> None:
        count = len(self.live_items())
        if count < 2:
            return
        try:
            self.call(self.items, ITEMS + "MoveItem", self.pb.items.MoveItemRequest(
                from_index=self.rng.randrange(count), to_index=self.rng.randrange(count)), self.pb.items.MoveItemResponse)
        except (Unknown, RpcError):
            pass  # an unknown delete may have shortened the list: OUT_OF_RANGE is right then

    def delete(self, key: str) -> None:
        try:
            self.call(self.items, ITEMS + "DeleteItem", self.pb.items.DeleteItemRequest(key=key),
                      self.pb.items.DeleteItemResponse)
            self.deleted[key] = True
        except Unknown:
            self.deleted[key] = False

    def attach(self, item: str, image: str) -> bool:
        """Attaches until answered; True when the photo is attached."""
        pb = self.pb
        deadline = time.monotonic() + 90
        while True:
            try:
                self.call(self.items, ITEMS + "AttachPhoto", pb.items.AttachPhotoRequest(item_key=item, image_key=image),
                          pb.items.Item)
                return True
            except Unknown:
                pass
            except RpcError:
                pass
            # A repeat of an attach that was done is refused: look.
            try:
                got = self.call(self.items, ITEMS + "GetItem", pb.items.GetItemRequest(key=item), pb.items.Item)
                if image in got.photo_keys:
                    return True
            except (Unknown, RpcError):
                pass
            if time.monotonic() > deadline:
                self.findings.append(f"attach of {image} to item {item} not answered within 90 s")
                return False
            time.sleep(0.2)

    def put_photo(self, item: str) -> None:
        pb = self.pb
        key = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
        data = self.unique_jpeg(key)
        try:
            info = self.until_acknowledged(self.images, IMAGES + "PutImage",
                                           pb.images.PutImageRequest(owner_key=item, data=data, key=key), pb.images.ImageInfo)
        except RpcError:
            return  # refused: e.g. the owner was deleted by an unknown delete
        self.photos[key] = {"item": item, "checksum": "sha256:" + hashlib.sha256(data).hexdigest(), "attached": False}
        if info.checksum != self.photos[key]["checksum"]:
            self.findings.append(f"PutImage {key} acknowledged checksum {info.checksum}, sent {self.photos[key]['checksum']}")
        self.photos[key]["attached"] = self.attach(item, key)

    def unique_jpeg(self, tag: str) -> bytes:
        """A library photo with a comment segment naming `tag` after SOI: the same picture, new
        content (an item keeps one photo per content, so a copy would not be attached)."""
        data = self.rng.choice(self.jpegs)
        comment = tag.encode()
        return data[:2] + b"\xff\xfe" + (len(comment) + 2).to_bytes(2, "big") + comment + data[2:]

    def put_big(self, item: str) -> None:
        """A movie over 32 MiB in a chunked upload, resumed across kills, then attached."""
        pb = self.pb
        key = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
        size = (32 << 20) + self.rng.randrange(1 << 20)
        data = bytearray(self.rng.randbytes(size))
        data[0:16] = bytes([0, 0, 0, 16]) + b"ftypqt  " + bytes(4)
        data = bytes(data)
        checksum = "sha256:" + hashlib.sha256(data).hexdigest()
        begin = self.until_acknowledged(self.images, IMAGES + "BeginUpload", pb.images.BeginUploadRequest(
            owner_key=item, total_size=size, checksum=checksum, key=key, content_type="video/quicktime"),
            pb.images.BeginUploadResponse)
        upload, chunk, offset = begin.upload_id, max(1 << 20, min(begin.max_chunk_bytes, 4 << 20)), 0
        deadline = time.monotonic() + 300
        while offset < size:
            try:
                reply = self.call(self.images, IMAGES + "AppendUpload", pb.images.AppendUploadRequest(
                    upload_id=upload, offset=offset, data=data[offset:offset + chunk]), pb.images.AppendUploadResponse,
                    timeout_ms=20000)
                offset = reply.received_bytes
            except (Unknown, RpcError):
                if time.monotonic() > deadline:
                    self.findings.append(f"upload {upload} of {key} did not finish within 300 s")
                    return
                time.sleep(0.2)
                try:  # where the service is (after its restart): resume there
                    offset = self.call(self.images, IMAGES + "BeginUpload", pb.images.BeginUploadRequest(
                        resume_upload_id=upload), pb.images.BeginUploadResponse).received_bytes
                except (Unknown, RpcError):
                    pass
        try:
            info = self.until_acknowledged(self.images, IMAGES + "CommitUpload",
                                           pb.images.CommitUploadRequest(upload_id=upload), pb.images.ImageInfo,
                                           timeout_ms=30000)
        except RpcError as error:
            # A repeated commit after one that was done: the upload is gone and the image stored.
            try:
                info = self.call(self.images, IMAGES + "StatImage", pb.images.StatImageRequest(key=key), pb.images.ImageInfo)
            except (Unknown, RpcError):
                self.findings.append(f"CommitUpload of {key} refused ({error}) and the image is not stored")
                return
        self.photos[key] = {"item": item, "checksum": checksum, "attached": False}
        if info.checksum != checksum:
            self.findings.append(f"CommitUpload {key} acknowledged checksum {info.checksum}, sent {checksum}")
        self.photos[key]["attached"] = self.attach(item, key)

    def capture(self, item: str) -> None:
        pb = self.pb
        if self.rng.random() < 0.5:
            request = pb.capture.CaptureRequest(item_key=item, source=pb.capture.LIBRARY,
                                                source_path=self.rng.choice(sorted(os.listdir(self.suite.library))))
        else:
            request = pb.capture.CaptureRequest(item_key=item, source=pb.capture.UPLOAD,
                                                data=self.unique_jpeg(f"capture {self.rng.getrandbits(64)}"))
        if self.rng.random() < 0.6:
            request.edit.CopyFrom(pb.capture.Edit(crop_x=10, crop_y=10, crop_width=200, crop_height=150,
                                                  shape=self.rng.choice([pb.capture.SQUARE, pb.capture.CIRCLE])))
        try:  # a repeat is the same photo again, which the item keeps once
            job = self.until_acknowledged(self.items, CAPTURE + "Capture", request, pb.capture.CaptureResponse).job
            self.captures[job.job_id] = item
        except RpcError:
            pass

    def thumbnails(self) -> None:
        keys = [k for k, p in self.photos.items() if p["checksum"] and p["item"] not in self.deleted]
        request = self.pb.images.EnqueueThumbnailsRequest(keys=self.rng.sample(keys, min(len(keys), 5)), missing_only=True)
        if not request.keys:
            return
        try:
            self.call(self.images, IMAGES + "EnqueueThumbnails", request, self.pb.images.EnqueueThumbnailsResponse)
        except (Unknown, RpcError):
            pass

    def step(self, number: int) -> None:
        live = self.live_items()
        if len(live) < 3:
            return self.create()
        item = self.rng.choice(live)
        if self.big_every and number % self.big_every == self.big_every - 1:
            return self.put_big(item)
        self.rng.choices([
            self.create, lambda: self.update(item), self.move, lambda: self.delete(item), lambda: self.put_photo(item),
            lambda: self.capture(item), self.thumbnails,
        ], weights=[3, 3, 1, 1, 4, 3, 1])[0]()

    def killer(self, seed: int) -> None:
        rng = random.Random(seed ^ 0x5EED)
        start = self.started
        while not self.stop.wait(rng.uniform(0.3, 2.0)):
            name = rng.choice(PROCESSES)
            with self.suite.lock:
                for dead in self.suite.check_alive():
                    self.findings.append(dead)
                self.suite.kill(name)
                self.kills.append((round(time.monotonic() - start, 3), name))
                self.history.write(json.dumps({"t": self.kills[-1][0], "kill": name}) + "\n")
                # Sometimes at once, sometimes after a moment the others notice.
                if rng.random() < 0.3:
                    time.sleep(rng.uniform(0.1, 1.0))
                self.suite.start(name)

    def run(self, seed: int) -> None:
        killer = threading.Thread(target=self.killer, args=(seed,), daemon=True)
        killer.start()
        end, number = time.monotonic() + self.seconds, 0
        try:
            while time.monotonic() < end:
                try:
                    self.step(number)
                except Unknown as error:
                    self.findings.append(f"a call repeated for 90 s was never answered: {error}")
                number += 1
        finally:
            self.stop.set()
            killer.join()
        self.steps = number

    # -- the checks ---------------------------------------------------------------------------

    def drain(self, limit_s: float = 300) -> None:
        """Waits until no queue holds work and no cascade is pending."""
        pb = self.pb
        deadline = time.monotonic() + limit_s
        while True:
            busy = []
            try:
                for client, queue in ((self.items, "capture"), (self.items, "cascade"), (self.images, "thumbnails")):
                    stats = self.call(client, JOBS + "Stats", pb.jobs.JobStatsRequest(queue=queue), pb.jobs.JobStatsResponse)
                    if stats.ready or stats.leased or stats.scheduled:
                        busy.append(f"{queue}: {stats.ready} ready, {stats.leased} leased, {stats.scheduled} scheduled")
                pending = self.call(self.items, ITEMS + "Stats", pb.items.ItemStatsRequest(), pb.items.ItemStatsResponse)
                if pending.pending_cascades:
                    busy.append(f"{pending.pending_cascades} cascades pending")
            except (Unknown, RpcError) as error:
                busy.append(str(error))
            if not busy:
                return
            if time.monotonic() > deadline:
                self.findings.append(f"queues did not drain within {limit_s:.0f} s: {'; '.join(busy)}")
                return
            time.sleep(0.5)

    def get(self, client, method, request, response_type):
        try:
            return self.until_acknowledged(client, method, request, response_type, limit_s=30)
        except RpcError as error:
            if error.code == NOT_FOUND:
                return None
            raise

    def check(self) -> None:
        pb = self.pb
        for key, states in self.item_states.items():
            got = self.get(self.items, ITEMS + "GetItem", pb.items.GetItemRequest(key=key), pb.items.Item)
            if self.deleted.get(key) is True and got is not None:
                self.findings.append(f"item {key}: deleted (acknowledged) but still there")
            if key not in self.deleted and got is None:
                self.findings.append(f"item {key}: acknowledged, never deleted, and gone")
            if got is not None and (got.name, got.value_in_dollars) not in states:
                self.findings.append(f"item {key}: holds {(got.name, got.value_in_dollars)}, acknowledged {states[0]}"
                                     + (f" or one of {states[1:]}" if len(states) > 1 else ""))
            if got is None and key in self.deleted:
                owned = self.get(self.images, IMAGES + "ListImages", pb.images.ListImagesRequest(owner_key=key),
                                 pb.images.ListImagesResponse)
                for image in owned.images:
                    self.findings.append(f"item {key} is deleted and its image {image.key} is still stored")
        for key, photo in self.photos.items():
            info = self.get(self.images, IMAGES + "StatImage", pb.images.StatImageRequest(key=key), pb.images.ImageInfo)
            item = photo["item"]
            if item in self.deleted:
                if info is not None and self.get(self.items, ITEMS + "GetItem", pb.items.GetItemRequest(key=item),
                                                 pb.items.Item) is None:
                    self.findings.append(f"photo {key} of deleted item {item} is still stored")
                continue
            if info is None:
                self.findings.append(f"photo {key} of item {item}: acknowledged and gone (DATA LOSS)")
            elif info.checksum != photo["checksum"]:
                self.findings.append(f"photo {key}: stored checksum {info.checksum}, acknowledged {photo['checksum']}")
            if photo["attached"]:
                got = self.get(self.items, ITEMS + "GetItem", pb.items.GetItemRequest(key=item), pb.items.Item)
                if got is not None and key not in got.photo_keys:
                    self.findings.append(f"photo {key}: attach to item {item} acknowledged, not in its photos")
        self.capture_outcomes = {"done": 0, "dead": 0}
        for job_id, item in self.captures.items():
            job = self.get(self.items, CAPTURE + "GetCaptureJob", pb.capture.GetCaptureJobRequest(job_id=job_id),
                           pb.capture.GetCaptureJobResponse)
            if job is None:
                continue  # finished and pruned after its retention
            job = job.job
            if job.state == pb.jobs.DEAD:
                self.capture_outcomes["dead"] += 1
                if not job.error:
                    self.findings.append(f"capture job {job_id}: DEAD without a reason")
                elif item not in self.deleted:
                    self.findings.append(f"capture job {job_id} of a live item is DEAD: {job.error}")
                continue
            if job.state != pb.jobs.DONE:
                self.findings.append(f"capture job {job_id}: {pb.jobs.JobState.Name(job.state)} after the queues drained")
                continue
            self.capture_outcomes["done"] += 1
            if item in self.deleted:
                continue
            got = self.get(self.items, ITEMS + "GetItem", pb.items.GetItemRequest(key=item), pb.items.Item)
            for key in (job.original_key, job.edited_key):
                if key and got is not None and key not in got.photo_keys and not (job.edited_key and key == job.original_key):
                    self.findings.append(f"capture job {job_id} DONE: {key} is not among item {item}'s photos")
        self.check_thumbnail_jobs()
        fsck = self.suite.homepwner("fsck", "--json", "--grace", "0")
        try:
            self.fsck = json.loads(fsck.stdout)
        except ValueError:
            self.findings.append(f"homepwner fsck exited {fsck.returncode} without JSON: {fsck.stdout}{fsck.stderr}")
            return
        for finding in self.fsck["findings"]:
            self.findings.append(f"fsck: {finding['kind']} {finding['key']} {finding['item']}: {finding['detail']}")


    def check_thumbnail_jobs(self) -> None:
        """A DEAD thumbnail job of an image still stored (the same generation, a JPEG) is a
        photo left without thumbnails: the kills must only delay a job, never end it."""
        pb = self.pb
        token = ""
        self.dead_thumbnail_jobs = 0
        while True:
            page = self.get(self.images, JOBS + "ListJobs",
                            pb.jobs.ListJobsRequest(queue="thumbnails", state=pb.jobs.DEAD, page_size=1000, page_token=token),
                            pb.jobs.ListJobsResponse)
            if page is None:
                return
            for job in page.jobs:
                self.dead_thumbnail_jobs += 1
                payload = pb.images.ThumbnailJob.FromString(job.payload)
                info = self.get(self.images, IMAGES + "StatImage", pb.images.StatImageRequest(key=payload.image_key),
                                pb.images.ImageInfo)
                if info is not None and info.content_type == "image/jpeg":
                    self.findings.append(f"thumbnail job {job.job_id} of image {payload.image_key}, still stored, is DEAD: "
                                         f"{job.last_error}")
            token = page.next_page_token
            if not token:
                return


def main() -> int:
    parser = argparse.ArgumentParser(prog="ops/chaos", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=None, help="the workload's and the kills' seed (default: random)")
    parser.add_argument("--minutes", type=float, default=1.0, help="how long the workload and the kills run")
    parser.add_argument("--big-every", type=int, default=40, help="every Nth step is a chunked upload over 32 MiB (0: none)")
    parser.add_argument("--keep", action="store_true", help="keep the data, keys and logs folder")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
    bin_dir = Path(os.environ.get("HOMEPWNER_BIN", ROOT / ".build" / "release"))
    root = Path(tempfile.mkdtemp(prefix="homepwner-chaos-"))
    print(f"ops/chaos: seed {seed}, {args.minutes} min, folder {root}", file=sys.stderr)
    pb = compile_protos(ROOT / "proto", root / "pb2")
    suite = Suite(root, bin_dir)
    started = time.monotonic()
    try:
        for name in PROCESSES:
            suite.start(name)
        chaos = Chaos(suite, pb, seed, args.minutes * 60, args.big_every)
        chaos.run(seed)
        chaos.findings += suite.check_alive()
        chaos.drain()
        chaos.check()
    finally:
        suite.stop_all()
    summary = {
        "seed": seed, "minutes": args.minutes, "seconds": round(time.monotonic() - started, 1), "steps": chaos.steps,
        "kills": len(chaos.kills), "kills_by_process": {n: sum(1 for _, k in chaos.kills if k == n) for n in PROCESSES},
        "calls": chaos.calls, "items": len(chaos.item_states), "deleted_items": len(chaos.deleted),
        "photos": len(chaos.photos), "captures": len(chaos.captures),
        "capture_outcomes": getattr(chaos, "capture_outcomes", {}),
        "dead_thumbnail_jobs": getattr(chaos, "dead_thumbnail_jobs", 0),
        "fsck": {k: v for k, v in getattr(chaos, "fsck", {}).items() if k != "findings"},
        "findings": chaos.findings, "folder": str(root) if args.keep or chaos.findings else "",
    }
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        acknowledged = sum(c["ok"] for c in chaos.calls.values())
        unknown = sum(c["unknown"] for c in chaos.calls.values())
        print(f"seed {seed}: {summary['steps']} steps, {acknowledged} calls acknowledged, {unknown} unknown, "
              f"{summary['kills']} kills {summary['kills_by_process']}, {summary['items']} items "
              f"({summary['deleted_items']} deleted), {summary['photos']} photos, {summary['captures']} captures "
              f"{summary['capture_outcomes']}, {summary['dead_thumbnail_jobs']} thumbnail jobs DEAD, "
              f"fsck {summary['fsck']}")
        for finding in chaos.findings:
            print("FINDING: " + finding)
        print("clean" if not chaos.findings else f"{len(chaos.findings)} findings; logs and data in {root}")
    if not chaos.findings and not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    return 1 if chaos.findings else 0


if __name__ == "__main__":
    sys.exit(main())
