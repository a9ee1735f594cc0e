"""The off-site round trip of docs/protocol.md §18 through restic, with the real executables:
items with real JPEG photos, `homepwner backup DIR` (signed, twice, so DIR holds two snapshots
sharing blobs), then restic (Debian's package, which ops/setup installs) into a local
repository: `restic init`, `restic backup DIR`, `restic check --read-data`, `restic restore
latest --target T`. The folder restic gives back must be DIR byte for byte (every file and
folder, each file's size and SHA-256), `homepwner backup verify --key` must pass on it, and
`homepwner restore` of it into a fresh data folder must start a suite that serves the same items
and the same photo bytes. Last, the checks are shown to be able to fail: one byte changed in a
restored blob is found by the comparison and by `backup verify`.

Then compose's backup profile without Docker (ops/test-compose runs it in Docker): the `backup`
service is left out of the default stack, its image is the Dockerfile's backup stage (the only
one with restic), every variable it is given is one its program or `homepwner backup` reads,
and its program (compose/backup-service), run with the environment compose gives it, backs up
on its interval, signed, copies each backup with restic, reports its health, and exits 0 on
SIGTERM.

restic missing is a failure, not a skip: `ops/setup` installs it."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

import yaml

from conftest import COMPOSE, DOCKERFILE, REPO_ROOT, _executable, compose_mounts, compose_secrets, compose_variables, free_port
from homepwner_client import Client, NotSent

BACKUP_SERVICE = REPO_ROOT / "compose" / "backup-service"
PHOTOS = sorted((REPO_ROOT / "Tests" / "Fixtures" / "exif-orientation").glob("*.jpg"))


def restic() -> str:
    found = shutil.which("restic")
    if not found:
        pytest.fail("restic is not installed: ops/setup installs Debian's restic package (apt-get install restic)")
    return found


class Suite:
    """image-service and item-service on free loopback ports over one data folder, as ops/run
    lays it out (items/ and images/ beside each other); the CLI connected to them."""

    def __init__(self, data: Path, work: Path, pb, zmq_context):
        self.data, self.work = data, work
        work.mkdir(parents=True, exist_ok=True)
        self.image_rpc = f"tcp://127.0.0.1:{free_port()}"
        self.item_rpc = f"tcp://127.0.0.1:{free_port()}"
        self.processes: dict[str, subprocess.Popen] = {}
        env = {k: v for k, v in os.environ.items() if not k.startswith("HOMEPWNER_")}
        self.env = env | {"HOMEPWNER_ITEM_RPC": self.item_rpc, "HOMEPWNER_IMAGE_RPC": self.image_rpc, "NO_COLOR": "1",
                          "XDG_CACHE_HOME": str(work / "cache")}
        self.start("image-service", self.image_rpc, [], pb, zmq_context)
        self.start("item-service", self.item_rpc, ["--image-service", self.image_rpc], pb, zmq_context)

    def start(self, name: str, rpc: str, extra: list[str], pb, zmq_context) -> None:
        events = f"tcp://127.0.0.1:{free_port()}"
        log = self.work / f"{name}.log"
        with open(log, "ab") as out:
            process = subprocess.Popen(
                [str(_executable(name)), "--rpc", rpc, "--events", events, "--data-dir", str(self.data), *extra],
                stdout=out, stderr=subprocess.STDOUT, env={k: v for k, v in self.env.items() if not k.startswith("HOMEPWNER_")},
                cwd=self.work)
        self.processes[name] = process
        deadline = time.monotonic() + 15
        while True:
            if process.poll() is not None:
                pytest.fail(f"{name} exited with {process.returncode} at start:\n{log.read_text(errors='replace')}")
            try:
                with Client(rpc, pb, context=zmq_context) as probe:
                    probe.health_check(timeout_ms=500)
                return
            except (TimeoutError, NotSent):
                if time.monotonic() > deadline:
                    process.kill()
                    pytest.fail(f"{name} did not answer Health/Check within 15 s:\n{log.read_text(errors='replace')}")
                time.sleep(0.1)

    def stop(self) -> dict[str, int]:
        """SIGTERM, item-service first (it calls the image service); each one's exit code."""
        codes = {}
        for name in ("item-service", "image-service"):
            process = self.processes.get(name)
            if process is None:
                continue
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
            try:
                codes[name] = process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
                codes[name] = -9
        self.processes.clear()
        return codes

    def cli(self, *arguments: str, code: int = 0, timeout: float = 60) -> subprocess.CompletedProcess:
        result = subprocess.run([str(_executable("homepwner")), *arguments], capture_output=True, text=True,
                                timeout=timeout, env=self.env, cwd=self.work)
        assert result.returncode == code, f"homepwner {' '.join(arguments)}: exit {result.returncode}, want {code}\n{result.stdout}{result.stderr}"
        return result

    def json(self, *arguments: str, timeout: float = 60):
        return json.loads(self.cli(*arguments, "--json", timeout=timeout).stdout)

    def items(self) -> dict[str, dict]:
        """Every item by key: name, serial, value, its photo keys in order, its primary photo."""
        listed = self.json("item", "ls", "--limit", "1000")["items"]
        return {i["key"]: {k: i[k] for k in ("name", "serial_number", "value_in_dollars", "photo_keys", "primary_photo_key")}
                for i in listed}

    def photo(self, key: str) -> bytes:
        out = self.work / f"got-{key}.jpg"
        self.cli("image", "get", key, "-o", str(out))
        return out.read_bytes()


def tree(root: Path) -> dict[str, tuple[str, int, str]]:
    """Every entry under root by relative path: ("dir", 0, "") or ("file", size, sha256)."""
    found = {}
    for path in sorted(root.rglob("*")):
        relative = str(path.relative_to(root))
        if path.is_symlink():
            found[relative] = ("symlink", 0, os.readlink(path))
        elif path.is_dir():
            found[relative] = ("dir", 0, "")
        else:
            data = path.read_bytes()
            found[relative] = ("file", len(data), hashlib.sha256(data).hexdigest())
    return found


def differences(expected: dict, got: dict) -> list[str]:
    problems = [f"missing: {p}" for p in sorted(expected.keys() - got.keys())]
    problems += [f"extra: {p}" for p in sorted(got.keys() - expected.keys())]
    problems += [f"{p}: {expected[p]} != {got[p]}" for p in sorted(expected.keys() & got.keys()) if expected[p] != got[p]]
    return problems


def test_a_backup_survives_a_restic_round_trip_and_restores_into_a_serving_suite(pb, zmq_context, tmp_path):
    restic_binary = restic()
    assert len(PHOTOS) >= 6, f"test photos: {PHOTOS}"
    live = Suite(tmp_path / "live-data", tmp_path / "live", pb, zmq_context)
    restored_suite = None
    try:
        # Items with real JPEG photos, attached (the first of each is primary), and one without.
        photos_by_key: dict[str, bytes] = {}
        for n, (name, files) in enumerate((("Sofa", PHOTOS[0:3]), ("Camera", PHOTOS[3:5]), ("Bike", []))):
            key = live.json("item", "add", name, "--serial", f"SN-{n}", "--value", str(100 * (n + 1)))["key"]
            if files:
                put = live.json("image", "put", *map(str, files), "--owner", key, "--no-progress")
                assert len(put) == len(files), put
                for entry in put:
                    live.json("item", "photo", "add", key, entry["image"]["key"])
                    photos_by_key[entry["image"]["key"]] = Path(entry["file"]).read_bytes()

        # Signed backups, twice: the second after one more item and photo, fetching only that photo.
        keys = tmp_path / "sign-keys"
        keys.mkdir()
        live.cli("keys", "sign-gen", "offsite", "--dir", str(keys))
        backup = tmp_path / "backup"
        first = live.json("backup", str(backup), "--sign-key", str(keys / "offsite.sign.secret"), "--no-progress")
        assert not first["problems"] and first["blobs_fetched"] == len(photos_by_key), first
        time.sleep(1.1)  # snapshot names are UTC seconds: a second backup in the same second would collide
        extra = live.json("item", "add", "Kettle", "--value", "30")["key"]
        put = live.json("image", "put", str(PHOTOS[5]), "--owner", extra, "--no-progress")  # one file: the image itself
        live.json("item", "photo", "add", extra, put["key"])
        photos_by_key[put["key"]] = PHOTOS[5].read_bytes()
        second = live.json("backup", str(backup), "--sign-key", str(keys / "offsite.sign.secret"), "--no-progress")
        assert not second["problems"] and second["blobs_fetched"] == 1 and second["blobs_kept"] == len(photos_by_key) - 1, second
        items = live.items()
        assert len(items) == 4 and sum(len(i["photo_keys"]) for i in items.values()) == len(photos_by_key) == 6, items
        expected = tree(backup)
        assert sum(1 for p in expected if p.startswith("blobs/sha256/") and expected[p][0] == "file") == len(photos_by_key), expected
        assert len([p for p in expected if p.count("/") == 1 and p.startswith("snapshots/")]) == 2, expected
        assert codes_ok(live.stop()), "the live suite did not stop cleanly"

        # restic: a local repository, the password from a file (RESTIC_PASSWORD_FILE).
        password = tmp_path / "restic.password"
        password.write_text("correct horse battery staple\n")
        password.chmod(0o600)
        repository = tmp_path / "restic-repo"
        env = {k: v for k, v in os.environ.items() if not k.startswith("RESTIC_")}
        env |= {"RESTIC_REPOSITORY": str(repository), "RESTIC_PASSWORD_FILE": str(password),
                "RESTIC_CACHE_DIR": str(tmp_path / "restic-cache")}

        def run_restic(*arguments: str) -> subprocess.CompletedProcess:
            result = subprocess.run([restic_binary, *arguments], capture_output=True, text=True, timeout=300, env=env)
            assert result.returncode == 0, f"restic {' '.join(arguments)}: exit {result.returncode}\n{result.stdout}{result.stderr}"
            return result

        run_restic("init")
        run_restic("backup", "--host", "homepwner-test", str(backup))
        snapshots = json.loads(run_restic("snapshots", "--json").stdout)
        assert len(snapshots) == 1 and snapshots[0]["paths"] == [str(backup)], snapshots
        run_restic("check", "--read-data")
        target = tmp_path / "restic-restored"
        run_restic("restore", "latest", "--target", str(target))
        # restic restores a path under the target as it was: T/<the absolute path of DIR>.
        restored = target / backup.relative_to(backup.anchor)
        assert restored.is_dir(), f"restic restored {sorted(str(p) for p in target.rglob('*'))[:20]}"

        # The same folder, byte for byte.
        got = tree(restored)
        assert differences(expected, got) == []
        assert len(got) == len(expected) > 10

        # The restored copy verifies offline, signature included.
        pub = str(keys / "offsite.sign.pub")
        verified = subprocess.run([str(_executable("homepwner")), "backup", "verify", str(restored), "--key", pub],
                                  capture_output=True, text=True, timeout=60)
        assert verified.returncode == 0, f"backup verify of restic's copy: {verified.stdout}{verified.stderr}"
        for snapshot in sorted(p.split("/")[1] for p in expected if p.count("/") == 1 and p.startswith("snapshots/")):
            older = subprocess.run([str(_executable("homepwner")), "backup", "verify", str(restored), "--key", pub,
                                    "--snapshot", snapshot], capture_output=True, text=True, timeout=60)
            assert older.returncode == 0, f"backup verify --snapshot {snapshot}: {older.stdout}{older.stderr}"

        # restore into a fresh data folder; the suite started on it serves the same items and bytes.
        fresh = tmp_path / "restored-data"
        restore = subprocess.run([str(_executable("homepwner")), "restore", str(restored), "--data-dir", str(fresh), "--key", pub],
                                 capture_output=True, text=True, timeout=120)
        assert restore.returncode == 0, f"homepwner restore: {restore.stdout}{restore.stderr}"
        assert (fresh / "items" / "items.db").is_file() and (fresh / "images" / "images.db").is_file(), sorted(map(str, fresh.rglob("*")))
        restored_suite = Suite(fresh, tmp_path / "restored", pb, zmq_context)
        assert restored_suite.items() == items
        for key, data in photos_by_key.items():
            assert restored_suite.photo(key) == data, f"photo {key}: other bytes after the round trip"
        assert codes_ok(restored_suite.stop()), "the restored suite did not stop cleanly"

        # The checks can fail: one byte changed in a restored blob.
        blob = next(restored / p for p in sorted(got) if p.startswith("blobs/sha256/") and got[p][0] == "file")
        data = bytearray(blob.read_bytes())
        data[len(data) // 2] ^= 0x01
        blob.write_bytes(bytes(data))
        assert differences(expected, tree(restored)) == [f"{blob.relative_to(restored)}: {expected[str(blob.relative_to(restored))]} "
                                                         f"!= {tree(restored)[str(blob.relative_to(restored))]}"]
        broken = subprocess.run([str(_executable("homepwner")), "backup", "verify", str(restored), "--key", pub],
                                capture_output=True, text=True, timeout=60)
        assert broken.returncode == 1 and blob.name in broken.stdout + broken.stderr, \
            f"backup verify with a changed blob: exit {broken.returncode}\n{broken.stdout}{broken.stderr}"
    finally:
        live.stop()
        if restored_suite:
            restored_suite.stop()


def codes_ok(codes: dict[str, int]) -> bool:
    assert codes == {"item-service": 0, "image-service": 0}, f"exit codes on SIGTERM: {codes}"
    return True


# MARK: compose's backup profile


def stages(dockerfile: str) -> dict[str, str]:
    """The Dockerfile's stages by name: each one's text from its FROM to the next."""
    text = "\n".join(line for line in re.sub(r"\\\n", " ", dockerfile).splitlines() if not line.lstrip().startswith("#"))
    parts = re.split(r"^(?=FROM\s)", text, flags=re.M)
    found = {}
    for part in parts:
        named = re.match(r"FROM\s+\S+\s+AS\s+(\S+)", part, re.I)
        if named:
            found[named.group(1)] = part
    return found


def script_reads(script: str) -> set[str]:
    """The variables compose/backup-service's code (not its comments) reads."""
    code = "\n".join(line for line in script.splitlines() if not line.lstrip().startswith("#"))
    names = set(re.findall(r"\$\{([A-Z][A-Z0-9_]*)", code))
    for listed in re.findall(r"for name in ([A-Z0-9_ ]+); do", code):
        names |= set(listed.split())
    return names


def test_the_backup_service_is_a_profile_with_its_own_image_and_reads_what_compose_gives_it():
    document = yaml.safe_load(COMPOSE.read_text())
    services = document["services"]
    backup = services["backup"]
    assert backup["profiles"] == ["backup"], "the backup service must start only with --profile backup"
    assert [name for name, service in services.items() if service.get("profiles")] == ["backup"]
    # Its image: the Dockerfile's backup stage, the only one with restic; the runtime stage,
    # which every other service runs, is the last one and has none.
    assert backup["build"]["target"] == "backup" and backup["image"] != services["item-service"]["image"]
    dockerfile = DOCKERFILE.read_text()
    found = stages(dockerfile)
    assert list(found)[-1] == "runtime", f"stages: {list(found)}"
    # The backup image's files are assembled in backup-root (the runtime image's and restic) and
    # copied into an empty image, as the runtime image's are from runtime-root.
    installs = {name: bool(re.search(r"apt-get install[^\n]*\brestic\b", text)) for name, text in found.items()}
    assert installs == {name: name == "backup-root" for name in found}, f"the stages installing restic: {installs}"
    assert "COPY compose/backup-service /rootfs/usr/local/bin/homepwner-backup-service" in found["backup-root"]
    assert "COPY --from=backup-root /rootfs/ /" in found["backup"]
    assert "COPY --from=runtime-root /rootfs/ /" in found["runtime"]
    assert backup["command"] == ["homepwner-backup-service"]
    assert backup["healthcheck"]["test"] == ["CMD", "homepwner-backup-service", "health"]
    assert os.access(BACKUP_SERVICE, os.X_OK)
    # Every variable it is given is read by its program or by `homepwner backup`.
    help_text = subprocess.run([str(_executable("homepwner")), "backup", "--help"], capture_output=True, text=True, timeout=30).stdout
    cli_reads = set(re.findall(r"\[env (HOMEPWNER_[A-Z0-9_]+)\]", help_text))
    assert "HOMEPWNER_BACKUP_SIGN_KEY" in cli_reads, help_text
    reads = script_reads(BACKUP_SERVICE.read_text()) | cli_reads
    environment = backup["environment"]
    assert set(environment) - reads == set(), f"given but read by nothing: {set(environment) - reads}"
    assert {"HOMEPWNER_BACKUP_INTERVAL", "HOMEPWNER_BACKUP_SIGN_KEY", "RESTIC_REPOSITORY", "RESTIC_PASSWORD",
            "RESTIC_PASSWORD_FILE"} <= set(environment)
    assert compose_variables(str(environment["HOMEPWNER_BACKUP_INTERVAL"])) == "86400"
    # It reaches the services where they bind, with a key they take (their own: admin).
    for variable, service in (("HOMEPWNER_ITEM_RPC", "item-service"), ("HOMEPWNER_IMAGE_RPC", "image-service")):
        port = re.fullmatch(r"tcp://\*:(\d+)", services[service]["environment"][variable]).group(1)
        assert environment[variable] == f"tcp://{service}:{port}", f"{variable}: {environment[variable]}"
    secrets = compose_secrets(document, backup)
    mounts = compose_mounts(backup)
    assert secrets[environment["HOMEPWNER_CLIENT_SECRET_KEY"]] == compose_variables(document["secrets"]["server-secret-key"]["file"])
    assert secrets[environment["HOMEPWNER_SERVER_KEY"]] == compose_variables(document["secrets"]["server-key"]["file"])
    # The backups go into the named volume backups; a local restic repository into restic.
    assert mounts[environment["HOMEPWNER_BACKUP_DIR"]] == ("backups", False)
    assert mounts["/restic"] == ("restic", False) and mounts["/keys"][1] is True
    assert {"backups", "restic"} <= set(document["volumes"])
    assert backup["depends_on"] == {"item-service": {"condition": "service_healthy"}, "image-service": {"condition": "service_healthy"}}


def test_the_backup_service_program_backs_up_on_its_interval_through_restic_and_stops_on_sigterm(pb, zmq_context, tmp_path):
    restic_binary = restic()
    live = Suite(tmp_path / "data", tmp_path / "live", pb, zmq_context)
    process = None
    try:
        key = live.json("item", "add", "Sofa", "--value", "1200")["key"]
        image = live.json("image", "put", str(PHOTOS[0]), "--owner", key, "--no-progress")["key"]
        live.json("item", "photo", "add", key, image)
        live.cli("keys", "sign-gen", "backup", "--dir", str(tmp_path))
        password = tmp_path / "restic.password"
        password.write_text("a restic password\n")
        # The environment compose gives the service, as a user sets the host's variables
        # (README), its paths and endpoints made local; no CURVE here.
        backup = yaml.safe_load(COMPOSE.read_text())["services"]["backup"]
        host = {"HOMEPWNER_BACKUP_INTERVAL": "2", "HOMEPWNER_BACKUP_SIGN_KEY": str(tmp_path / "backup.sign.secret"),
                "RESTIC_REPOSITORY": str(tmp_path / "repo"), "RESTIC_PASSWORD_FILE": str(password)}
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HOMEPWNER_", "RESTIC_"))}
        env |= {name: compose_variables(str(value), host) for name, value in backup["environment"].items()}
        for name in ("HOMEPWNER_CLIENT_SECRET_KEY", "HOMEPWNER_SERVER_KEY"):
            del env[name]
        folder = tmp_path / "backups"
        status = tmp_path / "status"
        env |= {"HOMEPWNER_ITEM_RPC": live.item_rpc, "HOMEPWNER_IMAGE_RPC": live.image_rpc, "HOMEPWNER_BACKUP_DIR": str(folder),
                "HOMEPWNER_BACKUP_STATUS": str(status), "RESTIC_CACHE_DIR": str(tmp_path / "restic-cache"),
                "PATH": f"{_executable('homepwner').parent}:{os.path.dirname(restic_binary)}:{env.get('PATH', '')}"}
        assert env["RESTIC_PASSWORD"] == "" and env["HOMEPWNER_BACKUP_INTERVAL"] == "2", env
        health = lambda: subprocess.run([str(BACKUP_SERVICE), "health"], env=env, capture_output=True, text=True, timeout=10)
        assert health().returncode == 0, "healthy before the first round"
        log = tmp_path / "backup-service.log"
        with open(log, "wb") as out:
            process = subprocess.Popen([str(BACKUP_SERVICE)], env=env, stdout=out, stderr=subprocess.STDOUT)
        restic_env = {**env, "RESTIC_PASSWORD_FILE": str(password)}
        restic_env.pop("RESTIC_PASSWORD")
        deadline = time.monotonic() + 60
        while True:
            snapshots = sorted(p.name for p in (folder / "snapshots").glob("*") if not p.name.endswith(".partial")) \
                if (folder / "snapshots").is_dir() else []
            listed = subprocess.run([restic_binary, "snapshots", "--json"], env=restic_env, capture_output=True, text=True, timeout=60)
            offsite = json.loads(listed.stdout) if listed.returncode == 0 and listed.stdout.strip() else []
            if len(snapshots) >= 2 and len(offsite) >= 2:
                break
            assert process.poll() is None, f"backup-service exited {process.returncode}:\n{log.read_text()}"
            assert time.monotonic() < deadline, f"after 60 s: {snapshots}, {len(offsite)} restic snapshots\n{log.read_text()}"
            time.sleep(0.3)
        # Two rounds 2 s apart, each signed and copied; healthy.
        assert health().returncode == 0 and status.read_text().startswith("ok "), status.read_text()
        assert {tuple(s["paths"]) for s in offsite} == {(str(folder),)} and {s["hostname"] for s in offsite} == {"homepwner"}, offsite
        verified = subprocess.run([str(_executable("homepwner")), "backup", "verify", str(folder), "--key", str(tmp_path / "backup.sign.pub")],
                                  capture_output=True, text=True, timeout=60)
        assert verified.returncode == 0 and "signed by ed25519:" in verified.stdout, verified.stdout + verified.stderr
        # SIGTERM: exits 0, no round left half written.
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0, log.read_text()
        assert not list((folder / "snapshots").glob("*.partial")), sorted((folder / "snapshots").iterdir())
        text = log.read_text()
        assert "restic init" in text and text.count("round done") >= 2 and "stopped" in text, text
        # Retention: a round with HOMEPWNER_BACKUP_KEEP_DAILY=1 keeps only today's newest snapshot,
        # and what it keeps verifies.
        kept_log = tmp_path / "backup-service-kept.log"
        with open(kept_log, "wb") as out:
            process = subprocess.Popen([str(BACKUP_SERVICE)], env={**env, "HOMEPWNER_BACKUP_KEEP_DAILY": "1", "RESTIC_REPOSITORY": ""},
                                       stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while "round done" not in kept_log.read_text():
            assert process.poll() is None and time.monotonic() < deadline, kept_log.read_text()
            time.sleep(0.2)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0, kept_log.read_text()
        assert "retention: kept 1 snapshots, removed " in kept_log.read_text(), kept_log.read_text()
        assert len([p for p in (folder / "snapshots").iterdir()]) == 1, sorted((folder / "snapshots").iterdir())
        verified = subprocess.run([str(_executable("homepwner")), "backup", "verify", str(folder)], capture_output=True, text=True, timeout=60)
        assert verified.returncode == 0, verified.stdout + verified.stderr
        # A round that fails (the services gone) makes it unhealthy, and it goes on trying.
        live.stop()
        with open(log, "wb") as out:
            process = subprocess.Popen([str(BACKUP_SERVICE)], env={**env, "HOMEPWNER_BACKUP_RETRY": "1"}, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while not status.read_text().startswith("failed "):
            assert process.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        assert health().returncode == 1
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0, log.read_text()
        assert "round failed; trying again in 1 s" in log.read_text(), log.read_text()
        # A bad interval is refused at once.
        refused = subprocess.run([str(BACKUP_SERVICE)], env={**env, "HOMEPWNER_BACKUP_INTERVAL": "daily"}, capture_output=True, text=True, timeout=10)
        assert refused.returncode == 2 and "HOMEPWNER_BACKUP_INTERVAL must be a number of seconds" in refused.stderr, refused
    finally:
        if process and process.poll() is None:
            process.kill()
            process.wait()
        live.stop()
