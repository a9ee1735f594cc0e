"""Fixtures: the generated protobuf modules and real item-service and image-service processes."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
import zmq

from homepwner_client import Client, NotSent, compile_protos

REPO_ROOT = Path(__file__).resolve().parents[2]
COMPOSE = REPO_ROOT / "compose" / "docker-compose.yml"
DOCKERFILE = REPO_ROOT / "compose" / "Dockerfile"


def image_runtime(dockerfile: str) -> tuple[dict[str, str], list[str]]:
    """The ENV and VOLUME of the Dockerfile's last stage (the one compose runs): what every
    container of the image has before its compose `environment` and `volumes`."""
    lines = re.sub(r"\\\n", " ", dockerfile).splitlines()
    last = max(i for i, line in enumerate(lines) if re.match(r"\s*FROM\s", line, re.I))
    env, volumes = {}, []
    for line in lines[last:]:
        instruction = re.match(r"\s*(ENV|VOLUME)\s+(.*)", line, re.I)
        if not instruction:
            continue
        kind, rest = instruction.group(1).upper(), instruction.group(2).strip()
        if kind == "VOLUME":
            volumes += json.loads(rest) if rest.startswith("[") else rest.split()
        elif "=" in rest.split()[0]:
            env.update(part.split("=", 1) for part in shlex.split(rest))
        else:
            key, value = rest.split(None, 1)
            env[key] = value
    return env, volumes


def compose_variables(text: str, env: dict[str, str] | None = None) -> str:
    """`${NAME:-default}` and `${NAME}` in a compose value, as compose substitutes them from
    `env` (the default, or empty, when the name is not in it)."""
    env = env or {}
    return re.sub(r"\$\{([A-Z0-9_]+)(?::?-([^}]*))?\}", lambda m: env.get(m.group(1)) or m.group(2) or "", text)


def compose_mounts(service: dict, env: dict[str, str] | None = None) -> dict[str, tuple[str, bool]]:
    """A compose service's `volumes` as {container path: (volume or host path, read-only)},
    variables substituted from `env` (their defaults without it)."""
    mounts = {}
    for volume in service.get("volumes", []):
        source, target, *options = compose_variables(volume, env).split(":")
        mounts[target] = (source, "ro" in options)
    return mounts


def compose_secrets(compose: dict, service: dict, env: dict[str, str] | None = None) -> dict[str, str]:
    """{container path (/run/secrets/NAME): the host file} of the secrets a compose service is
    given, variables substituted from `env`; a name missing from the top-level `secrets` fails."""
    secrets = {}
    for entry in service.get("secrets", []):
        name = entry if isinstance(entry, str) else entry["source"]
        target = entry.get("target", name) if isinstance(entry, dict) else name
        assert name in (compose.get("secrets") or {}), f"secret {name} is not defined at the top level"
        secrets[target if target.startswith("/") else f"/run/secrets/{target}"] = compose_variables(
            compose["secrets"][name]["file"], env)
    return secrets


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class RunningService:
    process: subprocess.Popen
    rpc: str
    events: str
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


def default_stack(document: dict) -> dict:
    """A compose file with only the services `docker compose up` starts: a service of a profile
    (the backup profile's `backup`) runs only when asked for (--profile NAME), and has tests of
    its own (test_backup_restic.py; ops/test-compose in Docker)."""
    return {**document, "services": {name: service for name, service in document["services"].items() if not service.get("profiles")}}


@pytest.fixture(scope="session")
def compose() -> dict:
    """compose/docker-compose.yml as read, its services those `docker compose up` starts
    (default_stack; test_k8s has its own: the services only)."""
    return default_stack(yaml.safe_load(COMPOSE.read_text()))


@pytest.fixture(scope="session")
def pb(tmp_path_factory):
    """The homepwner.v1 *_pb2 modules, generated from proto/ into a temp dir."""
    return compile_protos(REPO_ROOT / "proto", tmp_path_factory.mktemp("pb2"))


@pytest.fixture(scope="session")
def zmq_context():
    context = zmq.Context()
    yield context
    context.term()


def _executable(name: str) -> Path:
    bin_dir = Path(os.environ.get("HOMEPWNER_BIN", ".build/debug"))
    if not bin_dir.is_absolute():
        bin_dir = REPO_ROOT / bin_dir
    executable = bin_dir / name
    if not os.access(executable, os.X_OK):
        pytest.fail(f"{executable} is missing; build it first (swift build) or set HOMEPWNER_BIN")
    return executable


def _start(name: str, extra_args: list[str], pb, zmq_context, tmp_path_factory) -> RunningService:
    """Starts `name` on free loopback ports with its own data dir; returns once Health/Check answers."""
    executable = _executable(name)
    work = tmp_path_factory.mktemp(name)
    rpc = f"tcp://127.0.0.1:{free_port()}"
    events = f"tcp://127.0.0.1:{free_port()}"
    log_path = work / f"{name}.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOMEPWNER_")}
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [str(executable), "--rpc", rpc, "--events", events, "--data-dir", str(work / "data"), *extra_args],
            stdout=log, stderr=subprocess.STDOUT, env=env, cwd=work,
        )
    service = RunningService(process, rpc, events, log_path)

    # Ready once Health/Check answers.
    deadline = time.monotonic() + 15
    while True:
        if process.poll() is not None:
            pytest.fail(f"{name} exited with {process.returncode} at start:\n{service.log()}")
        try:
            with Client(rpc, pb, context=zmq_context) as probe:
                probe.health_check(timeout_ms=500)
            break
        except (TimeoutError, NotSent):
            if time.monotonic() > deadline:
                process.kill()
                pytest.fail(f"{name} did not answer Health/Check within 15 s:\n{service.log()}")
            time.sleep(0.1)
    return service


def _stop(name: str, service: RunningService) -> None:
    """SIGTERM; the process must exit 0 within 5 s."""
    process = service.process
    process.send_signal(signal.SIGTERM)
    try:
        code = process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        pytest.fail(f"{name} did not exit within 5 s of SIGTERM:\n{service.log()}")
    assert code == 0, f"{name} exited with {code} after SIGTERM:\n{service.log()}"


@pytest.fixture(scope="session")
def image_service(pb, zmq_context, tmp_path_factory):
    """image-service on free loopback ports with a temp data dir, stopped with SIGTERM at the end (exit 0)."""
    service = _start("image-service", [], pb, zmq_context, tmp_path_factory)
    yield service
    _stop("image-service", service)


@pytest.fixture(scope="session")
def item_service(image_service, pb, zmq_context, tmp_path_factory):
    """item-service on free loopback ports, its --image-service pointing at image_service (the delete
    cascade's target); stopped with SIGTERM at the end, before image_service (must exit 0 within 5 s)."""
    service = _start("item-service", ["--image-service", image_service.rpc], pb, zmq_context, tmp_path_factory)
    yield service
    _stop("item-service", service)


@pytest.fixture
def client(item_service, pb, zmq_context):
    """A DEALER client connected to item_service."""
    with Client(item_service.rpc, pb, context=zmq_context) as dealer:
        yield dealer


@pytest.fixture
def image_client(image_service, pb, zmq_context):
    """A DEALER client connected to image_service."""
    with Client(image_service.rpc, pb, context=zmq_context) as dealer:
        yield dealer
