#!/usr/bin/env python3
"""The compose stack in real Docker, driven through the `homepwner` CLI (run by ops/test-compose,
which installs Docker, builds the image and cleans up; this file needs the engine answering and
the image built). Standard library plus PyYAML (docker-compose's own dependency).

The stack runs with CURVE keys as a user's would: `homepwner keys init --owner 10001` makes them
(the containers' user reads the secrets), compose passes them as secrets, and the CLI calls with
the admin key.

What it checks, in order (each step bounded in time; on failure the containers' logs are printed):
  1. every container healthy (docker's health status: the compose health checks, which call
     with keys); a client without keys gets no answer; a reader key added to allowed_keys on
     the host is let in without a restart, may list but not delete, and is refused once revoked
     (the services reload the file through their read-only mount of the keys folder);
  2. items created; a capture from the photo library (the photo-library volume) with a square
     edit: the original stored untouched (same SHA-256), the edit square, both attached;
  3. a thumbnail batch (`thumbs batch --all`): every job done, none dead;
  4. a cascade delete: an item with photos and thumbnails deleted, every image of it gone;
  5. `--scale thumbnail-worker=2`: both replicas take jobs (worker ids in the jobs' leases);
  6. a larger batch with the image service crashed mid-way (SIGKILL of its process; see
     crash_image_service): its restart policy brings it back, the batch finishes, every job
     done, nothing lost, no thumbnail missing;
  7. stop (every container exits 0 on SIGTERM), down, up: every item and photo still there;
  8. the memory of each container (docker stats) after the workload and after the restart;
  9. the backup profile (its own image, homepwner-backup): `homepwner backup /backups` every
     3 s, signed, each copied by restic to a local repository in the restic volume; two rounds
     of each, `homepwner backup verify --key` in the container, `restic check`, restic's latest
     snapshot restored in the container equal to the files of /backups and verifying; exit 0
     on SIGTERM;
 10. the README's restore into the volumes, twice: from the backups volume, then from restic
     (--from-restic), each after a change the restore must undo: the stack stopped, `docker-compose
     run … backup homepwner-backup-service restore` with the data volumes mounted, started
     again: the backed-up items, images and bytes served, every file the image user's.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
COMPOSE = REPO / "compose" / "docker-compose.yml"
HOST_OVERRIDE = REPO / "compose" / "docker-compose.host.yml"
DOCKER = os.environ.get("DOCKER", "/usr/bin/docker")
LIBRARY_PHOTO = REPO / "Tests" / "Fixtures" / "exif-orientation" / "Landscape_6.jpg"
CASCADE_PHOTO = REPO / "Tests" / "Fixtures" / "exif-orientation" / "Portrait_3.jpg"
SERVICES = ("item-service", "image-service", "capture-worker", "thumbnail-worker")
# Started only with --profile backup.
BACKUP = "backup"
# What the backup service is given (rendered into the compose file): a round every 3 s.
BACKUP_INTERVAL = 3


class Failure(Exception):
    pass


def log(message: str) -> None:
    print(f"scenario: {message}", file=sys.stderr, flush=True)


def check(condition: bool, message: str) -> None:
    if not condition:
        raise Failure(message)


def run(command: list[str], timeout: float = 120, ok: tuple[int, ...] = (0,), env: dict | None = None) -> subprocess.CompletedProcess:
    """Runs a command, its output captured; a Failure when it times out or exits other than `ok`."""
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise Failure(f"timed out after {timeout} s: {' '.join(command)}")
    if result.returncode not in ok:
        raise Failure(f"exit {result.returncode}: {' '.join(command)}\n{result.stdout[-3000:]}{result.stderr[-3000:]}")
    return result


class Stack:
    def __init__(self, args):
        self.args = args
        self.project = args.project
        self.rendered = Path(args.rendered)
        self.work = Path(args.work)
        self.homepwner = str(Path(args.bin) / "homepwner")
        self.ports: dict[str, int] = {}
        self.phases: list[tuple[str, float]] = []
        self.figures: dict = {}

    # -- set-up --------------------------------------------------------------------------

    def choose_ports(self) -> None:
        """Six free loopback ports from a high, unusual range (other tests use the usual ones)."""
        names = ("ITEM", "IMAGE", "ITEM_METRICS", "IMAGE_METRICS", "ITEM_EVENTS", "IMAGE_EVENTS")
        rng = random.Random()
        for _ in range(50):
            base = rng.randrange(47100, 48900, 10)
            ports = [base + 1, base + 2, base + 3, base + 4, base + 6, base + 7]
            if all(self.free(port) for port in ports):
                self.ports = dict(zip(names, ports))
                log(f"ports: {self.ports}")
                return
        raise Failure("no six free ports in 47100-48900")

    def scrape(self, port: int) -> str:
        """GET /metrics of a scrape endpoint on loopback, with the bearer token keys init made
        (docs/protocol.md 8.1), as Prometheus's credentials_file sends it; without it: 401."""
        url = f"http://127.0.0.1:{port}/metrics"
        try:
            urllib.request.urlopen(url, timeout=10)
            raise Failure(f"scrape of :{port} without the token was served")
        except urllib.error.HTTPError as error:
            check(error.code == 401, f"scrape of :{port} without the token: {error.code}")
        token = (self.keys / "metrics.token").read_text().strip()
        request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(request, timeout=10) as response:
            check(response.status == 200, f"scrape of :{port}: {response.status}")
            return response.read().decode()

    @staticmethod
    def free(port: int) -> bool:
        for host in ("127.0.0.1", "0.0.0.0"):
            with socket.socket() as s:
                try:
                    s.bind((host, port))
                except OSError:
                    return False
        return True

    def render(self) -> None:
        """docker-compose.yml + docker-compose.host.yml, merged by compose itself, without `ports:`
        and `build:`. Compose 1.29 (docker-py) refuses published ports with network_mode: host
        ('"host" network_mode is incompatible with port_bindings') instead of discarding them
        as the engine and compose v2 do, and an override can only add ports, never remove them;
        the image is the one ops/test-compose built, never built by compose."""
        # The file as users run it, alone: compose accepts it (--quiet: valid, nothing printed).
        run(["docker-compose", "-f", str(COMPOSE), "config", "--quiet"])
        alone = yaml.safe_load(run(["docker-compose", "-f", str(COMPOSE), "config"]).stdout)
        check(set(alone["services"]) == {*SERVICES, BACKUP} and {"items-data", "images-data", "photo-library", "backups", "restic"} <= set(alone["volumes"]),
              f"docker-compose config of {COMPOSE.name}: {sorted(alone['services'])}, volumes {sorted(alone.get('volumes', {}))}")
        check(alone["services"][BACKUP].get("profiles") == ["backup"] and all(not alone["services"][s].get("profiles") for s in SERVICES),
              f"profiles: {[(s, v.get('profiles')) for s, v in alone['services'].items()]}")
        # The backup service as a user sets it up (README): signed with a key of the keys folder,
        # restic to a repository in the restic volume, the password from a file there too.
        env = dict(os.environ, HOMEPWNER_KEYS=str(self.keys), **{f"HOMEPWNER_TEST_{k}_PORT": str(v) for k, v in self.ports.items()},
                   HOMEPWNER_BACKUP_INTERVAL=str(BACKUP_INTERVAL), HOMEPWNER_BACKUP_SIGN_KEY="/keys/backup.sign.secret",
                   RESTIC_REPOSITORY="/restic/repo", RESTIC_PASSWORD_FILE="/keys/restic.password")
        for name in ("RESTIC_PASSWORD", "HOMEPWNER_RESTIC_DIR"):
            env.pop(name, None)
        merged = run(["docker-compose", "-p", self.project, "-f", str(COMPOSE), "-f", str(HOST_OVERRIDE), "config"], env=env)
        config = yaml.safe_load(merged.stdout)
        check(set(config["services"]) == {*SERVICES, BACKUP}, f"services: {sorted(config['services'])}")
        for name, service in config["services"].items():
            service.pop("ports", None)
            service.pop("build", None)
            check(service.get("network_mode") == "host", f"{name} is not on the host network")
            image = {BACKUP: self.args.backup_image, "thumbnail-worker": self.args.media_image}.get(name, self.args.image)
            check(service.get("image") == image, f"{name} runs {service.get('image')}, not {image}")
        for name, secret in config.get("secrets", {}).items():
            check(Path(secret["file"]).parent == self.keys, f"secret {name} is {secret['file']}, not from {self.keys}")
        self.rendered.write_text("# rendered by tests/compose/scenario.py; not for editing\n" + yaml.safe_dump(config, sort_keys=False))
        self.env = dict(os.environ, HOMEPWNER_ITEM_RPC=f"tcp://127.0.0.1:{self.ports['ITEM']}",
                        HOMEPWNER_IMAGE_RPC=f"tcp://127.0.0.1:{self.ports['IMAGE']}", NO_COLOR="1",
                        HOMEPWNER_CLIENT_SECRET_KEY=str(self.keys / "admin.key_secret"),
                        HOMEPWNER_SERVER_KEY=str(self.keys / "server.key"))
        kept = ("HOMEPWNER_ITEM_RPC", "HOMEPWNER_IMAGE_RPC", "HOMEPWNER_CLIENT_SECRET_KEY", "HOMEPWNER_SERVER_KEY")
        for key in list(self.env):
            if key.startswith("HOMEPWNER_") and key not in kept:
                del self.env[key]

    def make_keys(self) -> None:
        """The CURVE keys as the README has a user make them: server and worker-kind secrets given to
        the image's user (10001), the admin key this user's."""
        self.keys = (self.work / f"keys-{self.project}").resolve()
        if self.keys.exists():
            shutil.rmtree(self.keys)
        made = run([self.homepwner, "keys", "init", str(self.keys), "--owner", "10001", "--json"])
        log(f"keys: {self.keys} ({json.loads(made.stdout)['server_public_key']} the servers' public key)")
        for name, owner in (("server.key_secret", 10001), ("capture-worker.key_secret", 10001),
                            ("thumbnail-worker.key_secret", 10001), ("metrics.token", 10001),
                            ("admin.key_secret", os.getuid())):
            info = (self.keys / name).stat()
            check(info.st_uid == owner and info.st_mode & 0o777 == 0o600, f"{name}: uid {info.st_uid}, mode {oct(info.st_mode)}")
        # The backup profile's: the key that signs each manifest, and restic's password, both the
        # containers' user's (README, "Back up and restore").
        run([self.homepwner, "keys", "sign-gen", "backup", "--dir", str(self.keys), "--owner", "10001"])
        password = self.keys / "restic.password"
        password.write_text(f"homepwner test {random.getrandbits(64):x}\n")
        os.chown(password, 10001, 10001)
        password.chmod(0o600)

    # -- docker --------------------------------------------------------------------------

    def compose(self, *args: str, timeout: float = 180) -> subprocess.CompletedProcess:
        return run(["docker-compose", "-p", self.project, "-f", str(self.rendered), *args], timeout=timeout)

    def containers(self, service: str | None = None) -> list[str]:
        # --profile backup: the backup service's container too, when there is one.
        out = self.compose("--profile", "backup", "ps", "-q", *([service] if service else [])).stdout
        return [line for line in out.split() if line]

    def inspect(self, container: str, template: str) -> str:
        return run([DOCKER, "inspect", "-f", template, container]).stdout.strip()

    def name(self, container: str) -> str:
        return self.inspect(container, "{{.Name}}").lstrip("/")

    def wait_healthy(self, counts: dict[str, int], timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        states = {}
        while time.monotonic() < deadline:
            states = {}
            for service, count in counts.items():
                ids = self.containers(service)
                for c in ids:
                    states[self.name(c)] = self.inspect(c, "{{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{end}}")
                if len(ids) != count:
                    states[service] = f"{len(ids)} containers, want {count}"
            if all(state == "running healthy" for state in states.values()):
                log("healthy: " + ", ".join(sorted(states)))
                return
            time.sleep(0.5)
        raise Failure(f"not healthy within {timeout} s: {states}")

    def dump_logs(self) -> None:
        try:
            for c in self.containers():
                name = self.name(c)
                print(f"---- {name}: {self.inspect(c, '{{.State.Status}} exit={{.State.ExitCode}} restarts={{.RestartCount}}')}",
                      file=sys.stderr)
                health = self.inspect(c, "{{if .State.Health}}{{json .State.Health.Log}}{{end}}")
                if health:
                    for entry in json.loads(health)[-2:]:
                        print(f"     health: exit {entry['ExitCode']}: {entry['Output'].strip()[:300]}", file=sys.stderr)
                logs = subprocess.run([DOCKER, "logs", "--tail", "40", c], capture_output=True, text=True, timeout=30)
                print(logs.stdout + logs.stderr, file=sys.stderr)
        except Exception as error:  # the logs are help, never the failure
            print(f"(could not print the logs: {error})", file=sys.stderr)

    def host_pids(self, container: str) -> dict[int, str]:
        """The host PIDs of a container's processes, with their command names (docker top)."""
        out = run([DOCKER, "top", container, "-eo", "pid,comm"]).stdout.splitlines()[1:]
        return {int(line.split()[0]): line.split()[1] for line in out if line.strip()}

    def volumes_mounted(self) -> set[str]:
        """The names of the volumes the containers mount (named and anonymous)."""
        names = set()
        for c in self.containers():
            names |= {m["Name"] for m in json.loads(self.inspect(c, "{{json .Mounts}}")) if m.get("Type") == "volume"}
        return names

    def memory(self) -> dict[str, str]:
        """Each container's memory as `docker stats` says (the cgroup's charge: on cgroup v1,
        pages of the executables already in the page cache, charged to whichever container
        read them first, are not counted again), and the VmRSS of its service process."""
        containers = self.containers()
        out = run([DOCKER, "stats", "--no-stream", "--format", "{{.ID}}\t{{.MemUsage}}", *containers]).stdout
        usage = {line.split("\t")[0]: line.split("\t")[1].split(" / ")[0] for line in out.splitlines() if line.strip()}
        figures = {}
        for c in containers:
            name = self.name(c).removeprefix(self.project + "_")
            rss = "?"
            for pid, command in self.host_pids(c).items():
                if command != "docker-init":
                    try:
                        status = Path(f"/proc/{pid}/status").read_text()
                        kb = next(int(l.split()[1]) for l in status.splitlines() if l.startswith("VmRSS"))
                        rss = f"{kb / 1024:.1f}MiB"
                    except (OSError, StopIteration):
                        pass
            stats = next((v for k, v in usage.items() if c.startswith(k)), "?")
            figures[name] = f"{stats} (docker stats), VmRSS {rss}"
        return dict(sorted(figures.items()))

    # -- the CLI -------------------------------------------------------------------------

    def cli(self, *args: str, ok: tuple[int, ...] = (0,), timeout: float = 120) -> subprocess.CompletedProcess:
        return run([self.homepwner, *args], env=self.env, ok=ok, timeout=timeout)

    def cli_json(self, *args: str, timeout: float = 120):
        out = self.cli(*args, "--json", timeout=timeout).stdout
        try:
            return json.loads(out)
        except json.JSONDecodeError:
            raise Failure(f"homepwner {' '.join(args)} --json printed no JSON:\n{out[:2000]}")

    def all_images(self) -> list[dict]:
        return self.cli_json("image", "ls", "--limit", "100000")

    def queue_idle(self, queue: str = "thumbnails", timeout: float = 120) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            stats = self.cli_json("queue", "stats", queue)
            if int(stats.get("ready", 0)) == 0 and int(stats.get("leased", 0)) == 0 and int(stats.get("scheduled", 0)) == 0:
                return stats
            time.sleep(0.3)
        raise Failure(f"queue {queue} still busy after {timeout} s: {stats}")

    def batch(self, batch_id: str) -> dict:
        return self.cli_json("queue", "batch", "thumbnails", batch_id)

    def done_jobs(self, queue: str = "thumbnails") -> list[dict]:
        return self.cli_json("queue", "ls", queue, "--state", "done", "--limit", "100000")

    def jobs_per_replica(self, service: str, jobs: list[dict]) -> dict[str, int]:
        """How many of `jobs` each replica of `service` did, by the host PID in each job's worker
        id (<kind>@<host>:<pid>…; the workers run with `pid: host`)."""
        workers = {self.name(c): c for c in self.containers(service)}
        pids = {pid: name for name, c in workers.items() for pid in self.host_pids(c)}
        taken = {name: 0 for name in workers}
        for job in jobs:
            pid = int(job["worker_id"].rsplit(":", 1)[1].split("#")[0])
            name = pids.get(pid, job["worker_id"])
            taken[name] = taken.get(name, 0) + 1
        check(len(workers) == 2 and all(taken.get(name, 0) > 0 for name in workers), f"{service} jobs per replica: {taken}")
        return taken

    # -- the scenario --------------------------------------------------------------------

    def phase(self, name: str):
        stack = self

        class Phase:
            def __enter__(self):
                log(f"== {name}")
                self.start = time.monotonic()

            def __exit__(self, *exc):
                seconds = time.monotonic() - self.start
                stack.phases.append((name, seconds))
                if exc[0] is None:
                    log(f"   {name}: {seconds:.1f} s")
        return Phase()

    def scenario(self) -> None:
        one_each = {s: 1 for s in SERVICES}
        with self.phase("up and healthy"):
            self.compose("up", "-d", "--no-build")
            self.wait_healthy(one_each)
            check(not self.containers(BACKUP), "up without --profile backup started the backup service")
            health = self.cli("health", "item", "image").stdout
            check(health.count("SERVING") == 2, health)
            for part, port in (("item-service", "ITEM_METRICS"), ("image-service", "IMAGE_METRICS")):
                text = self.scrape(self.ports[port])
                check(f'homepwner_process_info{{process="{part}"' in text, f"{part}'s scrape endpoint: {text[:300]}")

        with self.phase("keys: strangers unanswered, a reader added, refused, revoked without restart"):
            self.check_keys()

        with self.phase("items and a capture from the photo library with a square edit"):
            item_service = self.containers("item-service")[0]
            run([DOCKER, "cp", str(LIBRARY_PHOTO), f"{item_service}:/library/sofa.jpg"])
            sources = self.cli("capture", "sources").stdout
            log("capture sources:\n" + sources.rstrip())
            sofa = self.cli_json("item", "add", "Sofa", "--serial", "SN-1200", "--value", "1200")["key"]
            randoms = self.cli_json("item", "add", "--random", "--count", "4")
            check(len(randoms) == 4, f"random items: {randoms}")
            job = self.cli_json("capture", sofa, "--library", "sofa.jpg", "--square", "--size", "512", "--primary", "--wait")
            check(job["state"] == "DONE" and job["original_key"] and job["edited_key"], f"capture: {job}")
            original, edited = job["original_key"], job["edited_key"]
            got = self.work / "original.jpg"
            self.cli("image", "get", original, "-o", str(got))
            check(hashlib.sha256(got.read_bytes()).digest() == hashlib.sha256(LIBRARY_PHOTO.read_bytes()).digest(),
                  "the captured original is not the library photo, byte for byte")
            edit = self.cli_json("image", "stat", edited)
            check(edit["kind"] == "EDITED" and edit["width"] == edit["height"] == 512, f"the square edit: {edit}")
            item = self.cli_json("item", "show", sofa)
            check(set(item["photo_keys"]) == {original, edited} and item["primary_photo_key"] == edited, f"sofa: {item}")
            self.sofa, self.original = sofa, original

        with self.phase("thumbnail batch"):
            result = self.cli_json("thumbs", "batch", "--all", timeout=180)
            batch = result["batch"]
            check(int(batch["total"]) >= 2 and batch["done"] == batch["total"] and int(batch["dead"]) == 0, f"batch: {result}")
            thumbs = [i for i in self.all_images() if i["kind"] == "THUMBNAIL" and i["parent_key"] in (original, edited)]
            check(len({t["parent_key"] for t in thumbs}) == 2, f"thumbnails of the capture: {thumbs}")
            log(f"batch {batch['batch_id']}: {batch['done']}/{batch['total']} done; {len(thumbs)} thumbnails of the capture")
            # The same work in Metrics/Stats and in the image service's Prometheus text.
            stats = {row["service"]: row["stats"] for row in self.cli_json("stats", "item", "image")}
            figures = {(f["name"], tuple((l["name"], l["value"]) for l in f.get("labels", []))): f.get("value", 0)
                       for f in stats["image-service"].get("figures", [])}
            done = figures.get(("homepwner_queue_done", (("queue", "thumbnails"),)), 0)
            check(done >= int(batch["total"]), f"image-service's Stats: thumbnails done {done}, batch {batch['total']}")
            text = self.scrape(self.ports["IMAGE_METRICS"])
            check('homepwner_queue_done{process="image-service",queue="thumbnails"}' in text, text[:500])

        with self.phase("a movie's poster (the media image's FFmpeg, loaded by the thumbnail worker)"):
            # A portrait phone-style movie: 1 s of black, then a red top and a blue bottom,
            # stored turned a quarter (a display matrix), as phones store portrait video.
            movie = Path(self.args.work) / "walkthrough.mp4"
            coded = Path(self.args.work) / "coded.mp4"
            run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "color=black:s=320x240:d=1:r=25", "-f", "lavfi",
                 "-i", "color=red:s=160x240:d=2:r=25", "-f", "lavfi", "-i", "color=blue:s=160x240:d=2:r=25",
                 "-filter_complex", "[1][2]hstack[c];[0][c]concat=n=2:v=1:a=0", "-c:v", "libx264", "-pix_fmt", "yuv420p",
                 str(coded)], timeout=120)
            run(["ffmpeg", "-v", "error", "-y", "-i", str(coded), "-c", "copy", "-metadata:s:v", "rotate=90", str(movie)], timeout=60)
            put = self.cli_json("image", "put", str(movie))
            key = (put[0] if isinstance(put, list) else put)["key"]
            # Storing it queued its thumbnails job, as for a photo.
            deadline = time.monotonic() + 120
            while True:
                posters = sorted((i for i in self.all_images() if i["kind"] == "THUMBNAIL" and i["parent_key"] == key),
                                 key=lambda i: int(i["width"]))
                if len(posters) >= 3:
                    break
                check(time.monotonic() < deadline, f"the movie's poster thumbnails after 120 s: {posters}; "
                      f"its jobs: {self.cli('queue', 'dead', 'thumbnails', ok=(0, 1, 2, 3, 4, 5)).stdout[-1500:]}")
                time.sleep(1)
            check(len(posters) == 3, f"the movie's poster thumbnails: {posters}")
            largest = posters[-1]
            # Upright: the stored 320x240 turned a quarter is 240x320 (portrait).
            check(int(largest["height"]) > int(largest["width"]), f"the poster is not upright (portrait): {largest}")
            got = Path(self.args.work) / "poster.jpg"
            self.cli("image", "get", largest["key"], "-o", str(got))
            check(got.read_bytes()[:2] == b"\xff\xd8", "the poster is not a JPEG")
            log(f"movie {key}: {len(posters)} poster thumbnails, the largest {largest['width']}x{largest['height']}")

        with self.phase("cascade delete"):
            lamp = self.cli_json("item", "add", "Lamp", "--value", "80")["key"]
            job = self.cli_json("capture", lamp, "--file", str(CASCADE_PHOTO), "--crop", "0,0,640,640", "--wait")
            check(job["state"] == "DONE" and job["edited_key"], f"capture: {job}")
            self.queue_idle()
            owned = [i["key"] for i in self.all_images() if i.get("owner_key") == lamp]
            check(len(owned) >= 4, f"the lamp's images (original, edit, their thumbnails): {owned}")
            self.cli_json("item", "rm", lamp)
            deadline = time.monotonic() + 60
            while int(self.cli_json("item", "stats")["pending_cascades"]) > 0:
                check(time.monotonic() < deadline, "the cascade still pending after 60 s")
                time.sleep(0.3)
            gone = [k for k in owned if self.cli("image", "stat", k, ok=(0, 4)).returncode == 4]
            check(gone == owned, f"images left after the cascade: {set(owned) - set(gone)}")
            check(not [i for i in self.all_images() if i.get("owner_key") == lamp], "image ls still lists the lamp's images")
            self.cli("item", "show", lamp, ok=(4,))
            log(f"the lamp and its {len(owned)} images are gone")

        with self.phase("two thumbnail workers both take jobs"):
            self.compose("up", "-d", "--no-build", "--scale", "thumbnail-worker=2", "--scale", "capture-worker=2")
            self.wait_healthy({**one_each, "thumbnail-worker": 2, "capture-worker": 2})
            files = self.distinct_photos(self.args.photos)
            last_job = max((int(j["job_id"]) for j in self.done_jobs()), default=0)
            # Paused while the photos go in, so neither worker has the jobs before the other can lease.
            self.cli("queue", "pause", "thumbnails")
            put = self.cli_json("image", "put", *map(str, files), "--owner", self.sofa, timeout=300)
            check(len(put) == len(files), f"put {len(put)} of {len(files)}")
            self.cli("queue", "resume", "thumbnails")
            self.queue_idle()
            taken = self.jobs_per_replica("thumbnail-worker", [j for j in self.done_jobs() if int(j["job_id"]) > last_job])
            log(f"jobs per replica: {taken}")
            self.figures["jobs_per_replica"] = taken

        with self.phase("two capture workers both take jobs"):
            before = {j["job_id"] for j in self.done_jobs("capture")}
            # Paused while the captures go in, so neither worker has them all before the other leases.
            self.cli("queue", "pause", "capture")
            jobs = [self.cli_json("capture", self.sofa, "--library", "sofa.jpg", "--square", "--size", str(256 + 16 * n))["job_id"]
                    for n in range(8)]
            self.cli("queue", "resume", "capture")
            for job in jobs:
                state = self.cli_json("capture", "status", job, "--wait", timeout=120)
                check(state["state"] == "DONE", f"capture {job}: {state}")
            taken = self.jobs_per_replica("capture-worker", [j for j in self.done_jobs("capture") if j["job_id"] not in before])
            log(f"capture jobs per replica: {taken}")
            self.figures["capture_jobs_per_replica"] = taken

        with self.phase("image-service crashed mid-batch, restarted by its policy"):
            # --all makes every thumbnail again (new keys): the originals and edits must stay as they were.
            images_before = {i["key"]: i["checksum"] for i in self.all_images() if i["kind"] != "THUMBNAIL"}
            # The process is found before the batch starts, so the kill follows the progress
            # read at once (finding it takes docker calls, long enough for a fast pair of
            # workers to finish the batch).
            crash = self.crash_image_service()
            result = self.cli_json("thumbs", "batch", "--all", "--no-wait")
            batch_id, total = result["batch_id"], int(result["enqueued"])
            check(total >= 50, f"the batch: {result}")
            deadline = time.monotonic() + 60
            while True:
                progress = self.batch(batch_id)
                if int(progress["done"]) >= 5:
                    break
                check(time.monotonic() < deadline, f"the batch did not start: {progress}")
                time.sleep(0.05)
            killed_at = crash()
            check(int(progress["done"]) < total, f"the batch finished before the crash: {progress}")
            done_at_kill = int(progress["done"])
            log(f"killed image-service at {done_at_kill}/{total} done")
            image_service = self.containers("image-service")[0]
            deadline = time.monotonic() + 60
            while self.inspect(image_service, "{{.RestartCount}}") == str(self.restarts_before):
                check(time.monotonic() < deadline, "image-service was not restarted within 60 s (restart: unless-stopped)")
                time.sleep(0.2)
            self.wait_healthy({**one_each, "thumbnail-worker": 2, "capture-worker": 2})
            restarted = self.inspect(image_service, "{{.State.StartedAt}}")
            log(f"image-service restarted (restart count {self.inspect(image_service, '{{.RestartCount}}')}, "
                f"back {time.time() - killed_at:.1f} s after the kill)")
            # Jobs whose Complete was lost with the process come back when their lease (30 s) ends.
            deadline = time.monotonic() + 150
            while True:
                progress = self.batch(batch_id)
                if int(progress["pending"]) == 0:
                    break
                check(time.monotonic() < deadline, f"the batch not finished 150 s after the crash: {progress}")
                time.sleep(0.5)
            check(int(progress["done"]) == total and int(progress["dead"]) == 0, f"after the crash: {progress}")
            images_after = {i["key"]: i["checksum"] for i in self.all_images() if i["kind"] != "THUMBNAIL"}
            check(images_after == images_before,
                  f"originals and edits: {len(images_before)} before the crash, {len(images_after)} after, "
                  f"{sum(images_after.get(k) != v for k, v in images_before.items())} lost or changed")
            missing = self.cli_json("thumbs", "batch", "--missing", "--no-wait")
            check(int(missing.get("enqueued", 0)) == 0, f"thumbnails missing after the crash: {missing}")
            jobs = [j for j in self.done_jobs() if j.get("batch_id") == batch_id]
            after = sum(1 for j in jobs if int(j["updated_at_ms"]) > killed_at * 1000)
            retried = sum(1 for j in jobs if int(j["attempts"]) > 1)
            log(f"batch {batch_id}: {total}/{total} done, 0 dead; {after} finished after the crash, "
                f"{retried} took more than one attempt; image-service started again at {restarted}")
            check(after > 0, "no job of the batch finished after the crash: it was not mid-batch")
            # What the restarted store found: thumbnails written but not yet indexed when the
            # process died are quarantined (never deleted); no indexed image may lack its blob.
            recovery = json.loads(self.cli("call", "ImageService/Stats", "{}").stdout)  # proto3 JSON: lowerCamel
            check("missingBlobs" in recovery, f"ImageService/Stats: {recovery}")
            log(f"image store recovery after the crash: {recovery.get('quarantinedBlobs', 0)} blobs quarantined, "
                f"{recovery['missingBlobs']} missing, {recovery.get('finishedPuts', 0)} puts finished, "
                f"{recovery.get('removedLeftovers', 0)} leftovers removed")
            check(int(recovery["missingBlobs"]) == 0, f"indexed images without a blob after the crash: {recovery}")
            self.figures["crash"] = {"total": total, "done_at_kill": done_at_kill,
                                     "finished_after_crash": after, "retried": retried,
                                     "recovery": recovery}

        with self.phase("memory after the workload (docker stats)"):
            self.figures["memory_after_workload"] = self.memory()
            for name, usage in self.figures["memory_after_workload"].items():
                log(f"   {name}: {usage}")

        with self.phase("stop, down, up: everything still there"):
            items = {i["key"]: i for i in self.cli_json("item", "ls")["items"]}
            images = {i["key"]: i["checksum"] for i in self.all_images()}
            started = time.monotonic()
            self.compose("stop", "-t", "20")
            log(f"stop took {time.monotonic() - started:.1f} s")
            exits = {self.name(c): self.inspect(c, "{{.State.ExitCode}}") for c in self.containers()}
            check(all(code == "0" for code in exits.values()), f"exit codes on SIGTERM: {exits}")
            mounted = self.volumes_mounted()
            self.compose("down")
            check(not self.containers(), "containers left after down")
            # `down` keeps volumes, the anonymous ones too: each worker's /data (the image's
            # VOLUME, a worker mounts nothing there). Nothing refers to them any more: remove them.
            anonymous = sorted(v for v in mounted if not v.startswith(self.project + "_")
                               and run([DOCKER, "volume", "inspect", v], ok=(0, 1)).returncode == 0)
            if anonymous:
                run([DOCKER, "volume", "rm", *anonymous])
            log(f"down left {len(anonymous)} anonymous volumes (the workers' /data); removed them")
            self.figures["anonymous_volumes_left_by_down"] = len(anonymous)
            self.seen_volumes = mounted
            self.compose("up", "-d", "--no-build")
            self.wait_healthy(one_each)
            items_after = {i["key"]: i for i in self.cli_json("item", "ls")["items"]}
            check(items_after.keys() == items.keys(), f"items before {len(items)}, after {len(items_after)}")
            for key, item in items.items():
                check(items_after[key]["photo_keys"] == item["photo_keys"], f"{key}'s photos changed")
            images_after = {i["key"]: i["checksum"] for i in self.all_images()}
            check(images_after == images, f"images before {len(images)}, after {len(images_after)}")
            got = self.work / "original-after.jpg"
            self.cli("image", "get", self.original, "-o", str(got))
            check(got.read_bytes() == LIBRARY_PHOTO.read_bytes(), "the original's bytes changed after down and up")
            log(f"{len(items)} items, {len(images)} images (originals, edits, thumbnails) all there")
            self.figures["items"], self.figures["images"] = len(items), len(images)

        with self.phase("memory after the restart (docker stats)"):
            self.figures["memory_after_restart"] = self.memory()

        self.backup_profile(one_each)

        with self.phase("down -v"):
            mounted = self.volumes_mounted()
            self.compose("--profile", "backup", "down", "-v")
            volumes = run([DOCKER, "volume", "ls", "-q", "--filter", f"label=com.docker.compose.project={self.project}"]).stdout.split()
            check(not volumes, f"volumes left: {volumes}")
            left = [v for v in sorted(self.seen_volumes | mounted)
                    if run([DOCKER, "volume", "inspect", v], ok=(0, 1)).returncode == 0]
            check(not left, f"volumes of this run left after down -v (anonymous ones left by `down`?): {left}")

    def in_container(self, container: str, *command: str, ok: tuple[int, ...] = (0,), timeout: float = 120) -> subprocess.CompletedProcess:
        return run([DOCKER, "exec", container, *command], ok=ok, timeout=timeout)

    def snapshot_names(self, container: str) -> list[str]:
        """The finished snapshots in the backup container's /backups, oldest first."""
        listed = self.in_container(container, "ls", "/backups/snapshots", ok=(0, 1, 2)).stdout.split()
        return sorted(name for name in listed if not name.endswith(".partial"))

    def restic_snapshots(self, container: str) -> list[dict]:
        """restic's snapshots of the repository the backup service writes (none before its first round)."""
        listed = self.in_container(container, "restic", "snapshots", "--json", ok=(0, 1))
        return json.loads(listed.stdout) if listed.returncode == 0 and listed.stdout.strip() else []

    def state(self) -> tuple[dict, dict]:
        """({item key: (name, photo keys)}, {image key: checksum}): what a restore must bring back."""
        items = {i["key"]: (i["name"], tuple(i["photo_keys"])) for i in self.cli_json("item", "ls", "--limit", "100000")["items"]}
        return items, {i["key"]: i["checksum"] for i in self.all_images()}

    def restore_volumes(self, *options: str) -> str:
        """The README's restore into compose's volumes: the stack stopped (every container exits
        0), the backup service's program run once with the two data volumes mounted, the stack
        started again and healthy. Its output."""
        self.compose("--profile", "backup", "stop", "-t", "60")
        exits = {self.name(c): self.inspect(c, "{{.State.ExitCode}}") for c in self.containers()}
        check(all(code == "0" for code in exits.values()), f"exit codes on SIGTERM: {exits}")
        restored = run(["docker-compose", "-p", self.project, "-f", str(self.rendered), "--profile", "backup",
                        "run", "--rm", "--no-deps",
                        "-v", f"{self.project}_items-data:/restore/items-data",
                        "-v", f"{self.project}_images-data:/restore/images-data",
                        BACKUP, "homepwner-backup-service", "restore", *options], timeout=300)
        output = restored.stdout + restored.stderr
        log("restore: " + output.strip().replace("\n", "\n   "))
        # Every file the services will open is the image user's (what they run as).
        for volume in ("items-data", "images-data"):
            foreign = run([DOCKER, "run", "--rm", "--network", "none", "--user", "0", "--entrypoint", "find",
                           "-v", f"{self.project}_{volume}:/v", self.args.image, "/v", "!", "-user", "10001"]).stdout.split()
            check(not foreign, f"{volume}: not owned by 10001 after the restore: {foreign[:10]}")
        self.compose("up", "-d", "--no-build")
        self.wait_healthy({s: 1 for s in SERVICES})
        return output

    def backup_profile(self, one_each: dict[str, int]) -> None:
        with self.phase("backup profile: signed backups every 3 s, each copied by restic"):
            items, images = self.state()
            check(len(images) > 50, f"images to back up: {len(images)}")
            self.compose("--profile", "backup", "up", "-d", "--no-build", BACKUP)
            self.wait_healthy({**one_each, BACKUP: 1})
            container = self.containers(BACKUP)[0]
            deadline = time.monotonic() + 120
            while True:
                names, offsite = self.snapshot_names(container), self.restic_snapshots(container)
                if len(names) >= 2 and len(offsite) >= 2:
                    break
                check(time.monotonic() < deadline, f"after 120 s: backups {names}, restic snapshots {len(offsite)}")
                time.sleep(1)
            self.compose("--profile", "backup", "stop", "-t", "60", BACKUP)
            check(self.inspect(container, "{{.State.ExitCode}}") == "0", f"backup exited {self.inspect(container, '{{.State.ExitCode}}')} on SIGTERM")
            logs = run([DOCKER, "logs", container]).stdout
            check("restic init" in logs and logs.count("round done") >= 2, f"the backup service's log:\n{logs[-3000:]}")
            # The checks, in a one-off container of the backup service once its loop has stopped
            # (restic check wants the repository to itself): every snapshot verifies with the
            # signing key; restic's repository checks; its latest snapshot, restored, verifies and
            # holds the files of /backups as they were then (a snapshot or blob once written never
            # changes).
            script = """
                for name in $(ls /backups/snapshots | grep -v partial); do
                  homepwner backup verify /backups --snapshot "$name" --key /keys/backup.sign.pub
                done
                restic check
                restic restore latest --target /tmp/offsite
                homepwner backup verify /tmp/offsite/backups --key /keys/backup.sign.pub
                echo "== offsite"; cd /tmp/offsite/backups && find . -type f -exec sha256sum {} +
                echo "== backups"; cd /backups && find . -type f -exec sha256sum {} +
                echo "== manifest"; cat "/backups/snapshots/$(ls /backups/snapshots | grep -v partial | tail -n 1)/manifest.json"
            """
            checked = run(["docker-compose", "-p", self.project, "-f", str(self.rendered), "--profile", "backup",
                           "run", "--rm", "--no-deps", BACKUP, "sh", "-euc", script], timeout=300).stdout
            head, _, rest = checked.partition("== offsite\n")
            offsite_files, _, rest = rest.partition("== backups\n")
            backup_files, _, manifest = rest.partition("== manifest\n")
            digests = lambda text: {l.split(None, 1)[1].strip(): l.split(None, 1)[0] for l in text.splitlines() if l.strip()}
            restored, current = digests(offsite_files), digests(backup_files)
            check(head.count("signed by ed25519:") >= len(names) + 1, f"verify did not say who signed each snapshot:\n{head[-2000:]}")
            check(restored and all(current.get(path) == digest for path, digest in restored.items()),
                  f"restic's copy differs from /backups: {[p for p, d in restored.items() if current.get(p) != d][:10]}")
            blobs = sum(1 for p in restored if p.startswith("./blobs/"))
            check(blobs == len(set(images.values())), f"restic's copy holds {blobs} blobs; the stack {len(set(images.values()))} distinct images")
            counts = json.loads(manifest)["counts"]
            check(counts["items"] == len(items) and counts["images"] == len(images),
                  f"the newest snapshot counts {counts}; the stack has {len(items)} items, {len(images)} images")
            log(f"{len(names)} snapshots verify with the signing key; restic: {len(offsite)} snapshots, check passed, "
                f"its latest restored ({len(restored)} files, {blobs} blobs) equals /backups and verifies")
            self.figures["backup"] = {"snapshots": len(names), "restic_snapshots": len(offsite), "files": len(restored)}
            self.backed_up = (items, images)

        with self.phase("restore into the volumes (README): from the backups volume, then from restic"):
            items, images = self.backed_up
            for options in ((), ("--from-restic",)):
                # A change after the backup, which the restore must undo.
                victim = next(key for key, (name, photos) in sorted(self.state()[0].items()) if not photos and key != self.sofa)
                self.cli("item", "rm", victim)
                added = self.cli_json("item", "add", "Bought after the backup", "--value", "5")["key"]
                output = self.restore_volumes("--key", "/keys/backup.sign.pub", *options)
                check("moved what /restore/items-data/items held" in output, f"the restore did not move the old data aside:\n{output}")
                after_items, after_images = self.state()
                check(after_items == items, f"after the restore{' '.join(options)}: {len(after_items)} items, want {len(items)}; "
                      f"the deleted one back: {victim in after_items}, the added one gone: {added not in after_items}")
                check(after_images == images, f"after the restore: {len(after_images)} images, want {len(images)}")
                got = self.work / "original-restored.jpg"
                self.cli("image", "get", self.original, "-o", str(got))
                check(got.read_bytes() == LIBRARY_PHOTO.read_bytes(), "the original's bytes changed by the restore")
                log(f"restore {' '.join(options) or 'from the backups volume'}: {len(items)} items and {len(images)} images back, "
                    f"the deleted item back, the later one gone")

    def check_keys(self) -> None:
        """CURVE in the containers: a client without keys gets no answer (and is told why it may
        be); a reader key added on the host is let in without a restart, lists items and is
        refused a delete (exit 8, PERMISSION_DENIED); once revoked it gets no answer again."""
        plain = {k: v for k, v in self.env.items() if k not in ("HOMEPWNER_CLIENT_SECRET_KEY", "HOMEPWNER_SERVER_KEY")}
        stranger = run([self.homepwner, "item", "ls", "--timeout", "2000"], env=plain, ok=(5,))
        check("CURVE" in stranger.stdout + stranger.stderr, f"a client without keys: {stranger.stdout}{stranger.stderr}")
        allowed = self.keys / "allowed_keys"
        run([self.homepwner, "keys", "gen", "auditor", "--dir", str(self.keys)])
        reader = dict(self.env, HOMEPWNER_CLIENT_SECRET_KEY=str(self.keys / "auditor.key_secret"))
        unlisted = run([self.homepwner, "item", "ls", "--timeout", "2000"], env=reader, ok=(5,))
        check("refused" in unlisted.stdout + unlisted.stderr or "CURVE" in unlisted.stdout + unlisted.stderr,
              f"an unlisted key: {unlisted.stdout}{unlisted.stderr}")
        run([self.homepwner, "keys", "allow", "reader", str(self.keys / "auditor.key"), "--file", str(allowed)])
        added = time.monotonic()
        while run([self.homepwner, "item", "ls", "--json", "--timeout", "2000"], env=reader, ok=(0, 5)).returncode != 0:
            check(time.monotonic() - added < 15, "the reader key was not let in within 15 s of keys allow (no reload?)")
        log(f"a reader key allowed on the host was let in after {time.monotonic() - added:.1f} s, no restart")
        item = self.cli_json("item", "add", "Doomed", "--value", "1")["key"]
        denied = run([self.homepwner, "item", "rm", item], env=reader, ok=(8,))
        check("PERMISSION_DENIED" in denied.stdout + denied.stderr or "permission" in (denied.stdout + denied.stderr).lower(),
              f"a reader deleting: {denied.stdout}{denied.stderr}")
        self.cli_json("item", "show", item)
        self.cli("item", "rm", item)
        run([self.homepwner, "keys", "revoke", "auditor", "--file", str(allowed)])
        revoked = time.monotonic()
        while run([self.homepwner, "item", "ls", "--json", "--timeout", "2000"], env=reader, ok=(0, 5)).returncode != 5:
            check(time.monotonic() - revoked < 15, "the revoked reader key was still answered 15 s after keys revoke")
        log(f"the revoked reader key got no answer {time.monotonic() - revoked:.1f} s after keys revoke")
        for container in self.containers():
            check(self.inspect(container, "{{.RestartCount}}") == "0", f"{self.name(container)} restarted")

    def crash_image_service(self):
        """Returns a function that kills image-service's process (found now) with SIGKILL from the
        host, a crash, and answers the time of the kill. `docker kill` would
        not do: on engine 20.10 it marks the container manually stopped, and `restart:
        unless-stopped` then leaves it stopped (tried: exited 137, restart count 0). The process
        killed is the service itself, not docker-init (PID 1 with init: true), which then exits
        with the service's status, and the engine restarts the container."""
        container = self.containers("image-service")[0]
        self.restarts_before = int(self.inspect(container, "{{.RestartCount}}"))
        pids = [pid for pid, command in self.host_pids(container).items() if command == "image-service"]
        check(len(pids) == 1, f"image-service processes: {self.host_pids(container)}")

        def kill() -> float:
            os.kill(pids[0], 9)
            return time.time()
        return kill

    def distinct_photos(self, count: int) -> list[Path]:
        """`count` JPEGs with different bytes (stored once each): the test photos, each with a
        COM segment naming its copy after SOI."""
        sources = sorted(glob.glob(str(REPO / "Tests" / "Fixtures" / "exif-orientation" / "*.jpg")))
        folder = self.work / "photos"
        folder.mkdir(parents=True, exist_ok=True)
        files = []
        for n in range(count):
            data = Path(sources[n % len(sources)]).read_bytes()
            text = f"homepwner compose test {self.project} {n}".encode()
            path = folder / f"photo-{n:03d}.jpg"
            path.write_bytes(data[:2] + b"\xff\xfe" + (len(text) + 2).to_bytes(2, "big") + text + data[2:])
            files.append(path)
        return files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", required=True, help="the folder of the host's homepwner executable")
    parser.add_argument("--project", default="homepwner-test")
    parser.add_argument("--work", default=str(REPO / ".build" / "compose-test"))
    parser.add_argument("--rendered", help="where the merged compose file goes (default: WORK/docker-compose.rendered.yml)")
    parser.add_argument("--image", default="homepwner:test")
    parser.add_argument("--backup-image", default="homepwner-backup:test", help="the Dockerfile's backup stage")
    parser.add_argument("--media-image", default="homepwner-media:test", help="the Dockerfile's media stage (the thumbnail workers')")
    parser.add_argument("--photos", type=int, default=160, help="photos put for the two-worker and crash batches")
    args = parser.parse_args()
    args.rendered = args.rendered or str(Path(args.work) / "docker-compose.rendered.yml")
    Path(args.work).mkdir(parents=True, exist_ok=True)
    stack = Stack(args)
    status = 0
    try:
        stack.choose_ports()
        stack.make_keys()
        stack.render()
        stack.scenario()
        shutil.rmtree(stack.keys, ignore_errors=True)
    except Failure as failure:
        log(f"FAILED: {failure}")
        stack.dump_logs()
        status = 1
    except Exception as error:
        import traceback
        traceback.print_exc()
        log(f"FAILED: {error!r}")
        stack.dump_logs()
        status = 1
    finally:
        for name, seconds in stack.phases:
            log(f"   {seconds:6.1f} s  {name}")
        for key in ("memory_after_workload", "memory_after_restart"):
            if key in stack.figures:
                log(f"{key.replace('_', ' ')}: " + ", ".join(f"{k} {v}" for k, v in stack.figures[key].items()))
        summary = Path(args.work) / "summary.json"
        summary.write_text(json.dumps({"phases": stack.phases, **stack.figures}, indent=2) + "\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
