"""The compose topology without Docker: the four executables as separate processes with the
commands and environment compose/docker-compose.yml gives them (on top of the image's ENV;
service names and ports mapped to loopback; each named volume a local folder shared by the
services that mount it), driven through the `homepwner` CLI on the published ports: items, a
library capture with an edit, both services restarted, a thumbnail batch, a delete whose
cascade empties image-service, and a clean SIGTERM exit; afterwards nothing lies outside the
volumes.

The compose file is also checked against the code without running it: every `command` and
health check is an executable Package.swift builds, every HOMEPWNER_* variable is one that
service's executable reads (its --help lists `[env NAME]`), every tcp://NAME:PORT is the port
service NAME binds under the same variable, every path lies in a volume compose mounts, and
item-service and capture-worker see the same capture sources. (test_k8s checks the build-free
half of one of these: that some Swift source names each variable.)"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import struct
import subprocess
import time
from pathlib import Path

import pytest

from conftest import REPO_ROOT, _executable, compose_mounts, compose_secrets
from test_compose import Topology

# 1800×1200, EXIF orientation 1 (MIT licence: Tests/Fixtures/exif-orientation/LICENSE).
LANDSCAPE = REPO_ROOT / "Tests" / "Fixtures" / "exif-orientation" / "Landscape_1.jpg"
# Variables item-service and capture-worker must be given the same (Sources/Runtime/CaptureSources.swift;
# HOMEPWNER_CAPTURE_ALBUM_WRITABLE only matters to item-service, which does SaveToAlbum).
SHARED_CAPTURE = ("HOMEPWNER_CAPTURE_LIBRARY", "HOMEPWNER_CAPTURE_CAMERA", "HOMEPWNER_CAPTURE_CAMERA_TIMEOUT_MS")


# MARK: the compose file against the code


def package_executables() -> set[str]:
    """The executable products of Package.swift."""
    return set(re.findall(r'\.executable\(\s*name:\s*"([^"]+)"', (REPO_ROOT / "Package.swift").read_text()))


def help_text(executable: str, *arguments: str) -> str:
    result = subprocess.run([str(_executable(executable)), *arguments, "--help"], capture_output=True, text=True, timeout=10)
    assert result.returncode == 0, f"{executable} {' '.join(arguments)} --help: {result.returncode}\n{result.stderr}"
    return result.stdout


def options_read(executable: str, *arguments: str) -> dict[str, str | None]:
    """{HOMEPWNER_* variable: its default (None: none shown)} from the executable's --help."""
    found = {}
    for line in help_text(executable, *arguments).splitlines():
        variable = re.search(r"\[env (HOMEPWNER_[A-Z0-9_]+)\]", line)
        if variable:
            default = re.search(r"\(default: ([^)]*)\)", line)
            found[variable.group(1)] = default.group(1) if default else None
    return found


def compose_problems(compose: dict, reads: dict[str, dict[str, str | None]], executables: set[str]) -> list[str]:
    """What in `compose` the code disagrees with, given the variables each executable reads."""
    problems = []
    services = compose["services"]
    # What each service binds, by variable: a client's variable of the same name connects to it.
    binds = {(name, variable): int(bind.group(1)) for name, service in services.items()
             for variable, value in (service.get("environment") or {}).items()
             if (bind := re.fullmatch(r"tcp://\*:(\d+)", str(value)))}
    for name, service in services.items():
        command = service.get("command") or []
        if not command or command[0] not in executables:
            problems.append(f"{name}: command {command} is no executable Package.swift builds")
            continue
        check = (service.get("healthcheck") or {}).get("test", [])
        if len(check) < 2 or check[1] not in executables:
            problems.append(f"{name}: health check {check} runs no executable Package.swift builds")
        read = reads[command[0]]
        mounts = compose_mounts(service)
        try:
            secrets = compose_secrets(compose, service)
        except AssertionError as undefined:
            problems.append(f"{name}: {undefined}")
            secrets = {}
        for variable, value in (service.get("environment") or {}).items():
            if variable not in read:
                problems.append(f"{name}: {command[0]} does not read {variable}")
            value = str(value)
            for host, port in re.findall(r"tcp://([A-Za-z][A-Za-z0-9_.-]*):(\d+)", value):
                if binds.get((host, variable)) != int(port):
                    problems.append(f"{name}: {variable}={value}: {host} binds {variable} on port {binds.get((host, variable))}")
            if value.startswith("/") and value not in secrets and not any(value == t or value.startswith(t.rstrip("/") + "/") for t in mounts):
                problems.append(f"{name}: {variable}={value} lies in none of the volumes or secrets compose gives it {sorted(mounts)} {sorted(secrets)}")
    # The capture sources: what item-service offers, capture-worker must be able to read.
    effective = {}
    for name in ("item-service", "capture-worker"):
        env, read = services[name].get("environment") or {}, reads[services[name]["command"][0]]
        effective[name] = {v: str(env[v]) if v in env else read.get(v) for v in SHARED_CAPTURE}
    for variable in SHARED_CAPTURE:
        if effective["item-service"][variable] != effective["capture-worker"][variable]:
            problems.append(f"item-service and capture-worker differ in {variable}: "
                            f"{effective['item-service'][variable]!r} and {effective['capture-worker'][variable]!r}")
    library = {name: (services[name].get("environment") or {}).get("HOMEPWNER_CAPTURE_LIBRARY")
               for name in ("item-service", "capture-worker")}
    if all(library.values()):
        volumes = {}
        for name, path in library.items():
            mounts = compose_mounts(services[name])
            target = max((t for t in mounts if path == t or path.startswith(t.rstrip("/") + "/")), key=len, default=None)
            volumes[name] = (mounts[target][0], path[len(target):]) if target else None
        if volumes["item-service"] != volumes["capture-worker"]:
            problems.append(f"HOMEPWNER_CAPTURE_LIBRARY is not the same volume folder: {volumes}")
    return problems


@pytest.fixture(scope="module")
def reads(compose) -> dict[str, dict[str, str | None]]:
    return {service["command"][0]: options_read(service["command"][0]) for service in compose["services"].values()}


def test_compose_commands_and_variables_are_what_the_code_builds_and_reads(compose, reads):
    assert compose_problems(compose, reads, package_executables()) == []


def test_health_check_flags_are_ones_homepwner_health_takes(compose):
    flags = set(re.findall(r"--[a-z][a-z0-9-]*", help_text("homepwner", "health")))
    for name, service in compose["services"].items():
        used = {part for part in service["healthcheck"]["test"] if part.startswith("--")}
        assert used <= flags, f"{name}: homepwner health takes no {sorted(used - flags)}"


def test_the_consistency_check_catches_a_broken_compose_file(compose, reads):
    """compose_problems can fail: each breakage below is reported."""
    executables = package_executables()

    def broken(change) -> list[str]:
        copied = copy.deepcopy(compose)
        change(copied["services"])
        return compose_problems(copied, reads, executables)

    def misspell(services):
        env = services["item-service"]["environment"]
        env["HOMEPWNER_ITEM_RCP"] = env.pop("HOMEPWNER_ITEM_RPC")

    def wrong_executable(services):
        env = services["thumbnail-worker"]["environment"]
        env["HOMEPWNER_DATA_DIR"] = "/data"  # workers have no data folder

    def library_elsewhere(services):
        services["capture-worker"]["environment"]["HOMEPWNER_CAPTURE_LIBRARY"] = "/photos"

    def library_unmounted(services):
        services["capture-worker"]["volumes"] = []

    def wrong_port(services):
        services["thumbnail-worker"]["environment"]["HOMEPWNER_IMAGE_RPC"] = "tcp://image-service:5559"

    def events_port(services):
        services["item-service"]["environment"]["HOMEPWNER_IMAGE_RPC"] = "tcp://image-service:5562"

    def unknown_host(services):
        services["capture-worker"]["environment"]["HOMEPWNER_ITEM_RPC"] = "tcp://items:5551"

    def library_in_another_volume(services):
        services["capture-worker"]["volumes"] = ["other-library:/library:ro"]

    def no_library_for_the_worker(services):
        del services["capture-worker"]["environment"]["HOMEPWNER_CAPTURE_LIBRARY"]

    def secret_not_given(services):
        services["thumbnail-worker"]["secrets"] = ["server-key"]

    def secret_undefined(services):
        services["capture-worker"]["secrets"] = ["capture-worker-secret-key", "server-key", "admin-secret-key"]

    cases = {
        "misspelt": (misspell, r"item-service: item-service does not read HOMEPWNER_ITEM_RCP"),
        "not read by this executable": (wrong_executable, r"thumbnail-worker: thumbnail-worker does not read HOMEPWNER_DATA_DIR"),
        "a different library": (library_elsewhere, r"differ in HOMEPWNER_CAPTURE_LIBRARY"),
        "the library in no volume": (library_unmounted, r"capture-worker: HOMEPWNER_CAPTURE_LIBRARY=\S+ lies in none"),
        "the library in another volume": (library_in_another_volume, r"HOMEPWNER_CAPTURE_LIBRARY is not the same volume folder"),
        "no library for the worker": (no_library_for_the_worker, r"differ in HOMEPWNER_CAPTURE_LIBRARY"),
        "a port nothing binds": (wrong_port, r"thumbnail-worker: HOMEPWNER_IMAGE_RPC=\S+: image-service binds HOMEPWNER_IMAGE_RPC on port 5552"),
        "the events port for RPC": (events_port, r"item-service: HOMEPWNER_IMAGE_RPC=\S+: image-service binds HOMEPWNER_IMAGE_RPC on port 5552"),
        "a host no service is": (unknown_host, r"capture-worker: HOMEPWNER_ITEM_RPC=tcp://items:5551: items binds HOMEPWNER_ITEM_RPC on port None"),
        "a secret the worker is not given": (secret_not_given, r"thumbnail-worker: HOMEPWNER_CLIENT_SECRET_KEY=/run/secrets/thumbnail-worker-secret-key lies in none"),
        "a secret nowhere defined": (secret_undefined, r"capture-worker: secret admin-secret-key is not defined"),
        "an executable not built": (lambda s: s["image-service"].update(command=["image-server"]), r"no executable Package.swift builds"),
        "a health check not built": (lambda s: s["image-service"]["healthcheck"].update(test=["CMD", "hp", "health"]), r"health check"),
    }
    for what, (change, expected) in cases.items():
        problems = broken(change)
        assert any(re.search(expected, problem) for problem in problems), f"{what}: {problems}"


# MARK: the scenario


class CLI:
    """`homepwner` on the host, connected to the published item and image ports."""

    def __init__(self, topology: Topology, work: Path):
        self.item = topology.published("item-service", "HOMEPWNER_ITEM_RPC")
        self.image = topology.published("image-service", "HOMEPWNER_IMAGE_RPC")
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("HOMEPWNER_")}
        # The admin key `homepwner keys init` made, as a user's CLI calls the compose stack.
        self.env |= {"HOMEPWNER_CLIENT_SECRET_KEY": str(topology.keys / "admin.key_secret"),
                     "HOMEPWNER_SERVER_KEY": str(topology.keys / "server.key")}
        self.work = work

    def run(self, *arguments: str, timeout: float = 15) -> subprocess.CompletedProcess:
        command = [str(_executable("homepwner")), *arguments, "--item", self.item, "--image", self.image]
        try:
            return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=self.env, cwd=self.work)
        except subprocess.TimeoutExpired as late:
            raise AssertionError(f"homepwner {' '.join(arguments)}: no answer within {timeout} s\n{late.stderr or ''}") from None

    def json(self, *arguments: str, timeout: float = 15, code: int = 0):
        result = self.run(*arguments, "--json", timeout=timeout)
        assert result.returncode == code, f"homepwner {' '.join(arguments)}: exit {result.returncode}\n{result.stdout}{result.stderr}"
        return json.loads(result.stdout)


def jpeg_size(path: Path) -> tuple[int, int]:
    """(width, height) from a JPEG's frame header."""
    data = path.read_bytes()
    assert data[:2] == b"\xff\xd8", f"{path} is no JPEG"
    at = 2
    while at + 4 <= len(data):
        marker, length = data[at + 1], struct.unpack(">H", data[at + 2:at + 4])[0]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", data[at + 5:at + 9])
            return width, height
        at += 2 + length
    raise AssertionError(f"{path}: no frame header")


def number(value) -> int:
    """A proto3 JSON integer (64-bit ones are strings; zeros are left out)."""
    return int(value or 0)


def eventually(what: str, condition, seconds: float = 15, last=lambda: None):
    """condition()'s first true result, asked every 0.1 s for at most `seconds`; on failure
    the message shows `last()`, else the last result."""
    deadline = time.monotonic() + seconds
    while not (result := condition()):
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {seconds} s (last: {last() or result!r})")
        time.sleep(0.1)
    return result


@pytest.fixture
def topology(compose, tmp_path):
    """The four services started as compose says, each health check passing; stopped at the end.
    Each is started before what it connects to (depends_on orders starts, not readiness, and
    a restarted service comes back under running workers), so each must wait for the others."""
    topology = Topology(compose, tmp_path)
    try:
        for name in reversed(list(compose["services"])):
            topology.start(name)
        for name in compose["services"]:
            result = topology.health(name)
            assert result.returncode == 0, f"{name}: {result.stdout}{result.stderr}\n{topology.log(name)}"
        yield topology
    finally:
        topology.stop()


def test_the_compose_topology_items_capture_thumbnails_cascade_and_sigterm(topology, tmp_path):
    started = time.monotonic()
    (tmp_path / "cli").mkdir()
    cli = CLI(topology, tmp_path / "cli")
    try:
        scenario(topology, cli, tmp_path / "cli")
    except BaseException:
        for name in topology.processes:
            print(f"--- {name} log\n{topology.log(name)[-4000:]}")
        raise
    # 5. Every process exits 0 on SIGTERM, busy or not, stopped in compose's order.
    codes = topology.stop()
    assert codes == {name: 0 for name in topology.services}, (
        codes, {name: topology.log(name)[-2000:] for name, code in codes.items() if code != 0})
    # What the services keep is in their volumes: nothing else in the folder they ran in
    # (in a container it would be lost with the container).
    outside = {p.name for p in tmp_path.iterdir()} - {"volumes", "cli", "keys"} - {f"{name}.log" for name in topology.services}
    assert not outside, f"written outside the volumes: {sorted(outside)}"
    for volume in ("items-data", "images-data"):
        assert any((tmp_path / "volumes" / volume).iterdir()), f"nothing in {volume}"
    assert time.monotonic() - started < 60


def scenario(topology: Topology, cli: CLI, work: Path) -> None:
    # 1. Items: a few created, listed in the order made, their fields as given.
    made = [cli.json("item", "add", name, "--serial", serial, "--value", str(value))
            for name, serial, value in [("Lamp", "L-1", 40), ("Chair", "C-22", 125), ("Desk", "", 300)]]
    for item, (name, serial, value) in zip(made, [("Lamp", "L-1", 40), ("Chair", "C-22", 125), ("Desk", "", 300)]):
        assert (item["name"], item.get("serial_number", ""), number(item.get("value_in_dollars"))) == (name, serial, value), item
        assert re.fullmatch(r"[0-9a-f-]{36}", item["key"]), item
    listed = cli.json("item", "ls")
    assert number(listed["total_count"]) == 3, listed
    assert [(i["key"], i["name"]) for i in listed["items"]] == [(i["key"], i["name"]) for i in made], listed
    lamp = made[0]["key"]

    # 2. A capture from the shared library volume, with an edit: the crop's centred square.
    sources = cli.json("capture", "sources")
    assert {s["type"]: s.get("available", False) for s in sources["sources"]}.get("LIBRARY") is True, sources
    item_library = topology.host_path("item-service", topology.services["item-service"]["environment"]["HOMEPWNER_CAPTURE_LIBRARY"])
    (item_library / "trip").mkdir(parents=True)
    shutil.copy(LANDSCAPE, item_library / "trip" / "lamp.jpg")
    job = cli.json("capture", lamp, "--library", "trip/lamp.jpg", "--crop", "100,50,900,600", "--square", "--primary", "--wait",
                   timeout=20)
    assert job["state"] == "DONE" and job.get("original_key") and job.get("edited_key"), job
    original, edited = job["original_key"], job["edited_key"]
    item = cli.json("item", "show", lamp)
    assert item["photo_keys"] == [original, edited] and item["primary_photo_key"] == edited, item
    info = cli.json("image", "stat", edited)
    assert (info["kind"], info["parent_key"], info["owner_key"]) == ("EDITED", original, lamp), info
    assert (info["width"], info["height"]) == (600, 600), info
    got = cli.json("image", "get", edited, "-o", str(work / "edited.jpg"))
    assert number(got["bytes"]) == (work / "edited.jpg").stat().st_size > 0, got
    assert jpeg_size(work / "edited.jpg") == (600, 600)
    stored = cli.json("image", "stat", original)
    assert (stored["kind"], stored["width"], stored["height"]) == ("ORIGINAL", 1800, 1200), stored
    cli.json("image", "get", original, "-o", str(work / "original.jpg"))
    assert (work / "original.jpg").read_bytes() == LANDSCAPE.read_bytes(), "the original is not stored untouched"

    # The services restarted as compose restarts a container: exit 0 on SIGTERM, back with what
    # their volumes hold; the workers and item-service find them again.
    for name in ("image-service", "item-service"):
        assert topology.restart(name) == 0, f"{name} did not exit 0 on SIGTERM:\n{topology.log(name)[-2000:]}"
        result = topology.health(name)
        assert result.returncode == 0, f"{name} after a restart: {result.stdout}{result.stderr}\n{topology.log(name)[-2000:]}"
    assert cli.json("item", "show", lamp)["photo_keys"] == [original, edited]
    assert cli.json("image", "stat", edited)["checksum"] == info["checksum"]

    # 3. A thumbnail batch of a size no image has yet: every image gets it.
    enqueued = cli.json("thumbs", "batch", "--missing", "--sizes", "96", "--no-wait")
    assert number(enqueued.get("enqueued")) == 2 and enqueued.get("batch_id"), enqueued

    def finished():
        batch = cli.json("thumbs", "status", enqueued["batch_id"])
        return number(batch.get("pending")) == 0 and batch
    progress = eventually("the thumbnail batch is done", finished)
    assert (number(progress.get("total")), number(progress.get("done")), number(progress.get("dead"))) == (2, 2, 0), progress
    thumbnails = cli.json("image", "ls", "--owner", lamp, "--kind", "thumbnail")
    of96 = {t["parent_key"]: (t["width"], t["height"]) for t in thumbnails if max(t["width"], t["height"]) == 96}
    assert of96 == {original: (96, 64), edited: (96, 96)}, thumbnails
    rendition = cli.json("image", "rendition", edited, "--size", "96x96", "-o", str(work / "thumb.jpg"))
    stored96 = {t["key"] for t in thumbnails if t["parent_key"] == edited and t["width"] == 96}
    assert rendition["served"] in stored96 and (rendition["width"], rendition["height"]) == (96, 96), rendition
    assert jpeg_size(work / "thumb.jpg") == (96, 96)
    # Again: nothing is missing now.
    again = cli.json("thumbs", "batch", "--missing", "--sizes", "96")
    assert number(again.get("enqueued")) == 0 and not again.get("batch_id"), again

    # The thumbnails queued when the photos were stored (the default sizes) finish too.
    def idle():
        stats = cli.json("queue", "stats", "thumbnails")
        return all(number(stats.get(k)) == 0 for k in ("ready", "scheduled", "leased", "dead")) and stats
    eventually("the thumbnails queue empties", idle)
    thumbnails = cli.json("image", "ls", "--owner", lamp, "--kind", "thumbnail")
    images = [original, edited] + [t["key"] for t in thumbnails]
    # Those are the image service's sizes (what compose leaves HOMEPWNER_THUMBNAIL_SIZES at),
    # each no larger than its image; so a plain --missing batch has nothing to do.
    variable = "HOMEPWNER_THUMBNAIL_SIZES"
    sizes = topology.services["image-service"]["environment"].get(variable) or options_read("image-service")[variable]
    sizes = [int(size) for size in str(sizes).split(",") if size]
    longest = {original: 1800, edited: 600}
    have = {(t["parent_key"], max(t["width"], t["height"])) for t in thumbnails}
    assert have == {(key, min(size, edge)) for key, edge in longest.items() for size in sizes + [96]}, thumbnails
    nothing = cli.json("thumbs", "batch", "--missing")
    assert (number(nothing.get("enqueued")), number(nothing.get("already_done"))) == (0, 2), nothing

    # 4. The cascade: the item deleted, every image of it is gone from image-service.
    assert cli.json("item", "rm", lamp) == {"deleted": lamp}
    cli.json("item", "show", lamp, code=4)

    still = {}

    def gone():
        still.clear()
        for key in images:
            result = cli.run("image", "get", key, "-o", str(work / "gone.jpg"), "--json")
            if result.returncode != 4 or json.loads(result.stdout)["status"] != "NOT_FOUND":
                still[key] = (result.returncode, result.stdout.strip()[:200])
        return not still
    eventually("image get says NOT_FOUND for every image of the deleted item", gone, last=lambda: still)
    assert cli.json("image", "ls", "--owner", lamp) == []
    eventually("no cascade pending", lambda: number(cli.json("item", "stats").get("pending_cascades")) == 0)
    left = cli.json("item", "ls")
    assert [i["key"] for i in left["items"]] == [i["key"] for i in made[1:]], left

    # Work under way for the SIGTERM at the end: a capture and a batch of large thumbnails queued or running.
    chair = made[1]["key"]
    for n in range(3):
        cli.json("capture", chair, "--library", "trip/lamp.jpg", "--crop", f"{n * 100},0,600,600", "--wait", timeout=20)
    cli.json("capture", chair, "--library", "trip/lamp.jpg", "--circle")
    running = cli.json("thumbs", "batch", "--all", "--sizes", "1500,1000,700", "--no-wait")
    # The original and three edits, and the circle's edit once its capture is done.
    assert number(running.get("enqueued")) in (4, 5), running
