"""compose/docker-compose.yml, checked without Docker: every service has a health check, and
each check, run as written, answers 0 against the process started with that service's command
and environment (service names and published ports mapped to free loopback ports), and
non-zero when nothing listens."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

from conftest import COMPOSE, DOCKERFILE, _executable, compose_mounts, compose_secrets, free_port, image_runtime


def test_every_service_has_a_health_check_through_the_cli(compose):
    services = compose["services"]
    assert set(services) == {"item-service", "image-service", "capture-worker", "thumbnail-worker"}
    for name, service in services.items():
        check = service.get("healthcheck")
        assert check, f"{name} has no healthcheck"
        test = check["test"]
        assert test[:3] == ["CMD", "homepwner", "health"], f"{name}: {test}"
        assert test[3] in (name, name.removesuffix("-service")), f"{name} checks {test[3]}"


class Topology:
    """The compose services as local processes: every container port gets a free loopback port,
    every named volume a folder under `work` (the same folder for every service that mounts it),
    each of the image's VOLUMEs that compose mounts nothing over a folder of the service's own,
    the keys folder (HOMEPWNER_KEYS) `work/keys`, made by `homepwner keys init` as a user makes
    it, each secret its file there, and a HOMEPWNER_* path in a service's environment (the
    image's ENV, then compose's) or in its health check the file or folder it names."""

    def __init__(self, compose: dict, work: Path):
        self.compose = compose
        self.services = compose["services"]
        self.ports: dict[int, int] = {}
        for service in self.services.values():
            for value in service.get("environment", {}).values():
                for port in re.findall(r"tcp://(?:\*|127\.0\.0\.1):(\d+)", str(value)):
                    self.ports[int(port)] = free_port()
        self.work = work
        self.volumes = {name: work / "volumes" / name for name in compose.get("volumes") or {}}
        for folder in self.volumes.values():
            folder.mkdir(parents=True, exist_ok=True)
        self.keys = work / "keys"
        made = subprocess.run([str(_executable("homepwner")), "keys", "init", str(self.keys)], capture_output=True, text=True, timeout=30)
        assert made.returncode == 0, f"homepwner keys init: {made.stdout}{made.stderr}"
        self.variables = {"HOMEPWNER_KEYS": str(self.keys)}
        self.image_env, self.image_volumes = image_runtime(DOCKERFILE.read_text())
        self.processes: dict[str, subprocess.Popen] = {}
        self.logs: dict[str, Path] = {}

    def local(self, text: str) -> str:
        """tcp://*:N, tcp://NAME:N and tcp://127.0.0.1:N as the loopback endpoint of port N."""
        def endpoint(match: re.Match) -> str:
            port = int(match.group(2))
            return f"tcp://127.0.0.1:{self.ports.get(port, port)}"
        return re.sub(r"tcp://([*A-Za-z0-9_.-]+):(\d+)", endpoint, text)

    def host_path(self, name: str, path: str) -> Path:
        """The local file or folder of `path` in service `name`'s container: a secret it is given,
        or a path in one of its volumes (elsewhere it would be the image's, lost with the
        container)."""
        secrets = compose_secrets(self.compose, self.services[name], self.variables)
        if path in secrets:
            return (COMPOSE.parent / secrets[path]).resolve()
        mounts = {target: source for target, (source, _) in compose_mounts(self.services[name], self.variables).items()}
        for target in self.image_volumes:
            mounts.setdefault(target, None)
        for target in sorted(mounts, key=len, reverse=True):
            if path == target or path.startswith(target.rstrip("/") + "/"):
                source = mounts[target]
                if source is None:  # the image's anonymous volume, this container's own
                    folder = self.work / "volumes" / "anonymous" / name / target.strip("/")
                    folder.mkdir(parents=True, exist_ok=True)
                elif source.startswith(("/", ".")):  # a bind mount of a host folder
                    folder = (COMPOSE.parent / source).resolve()
                else:
                    assert source in self.volumes, f"{name}: {source} (mounted at {target}) is not a named volume"
                    folder = self.volumes[source]
                return folder / path[len(target):].lstrip("/")
        raise AssertionError(f"{name}: {path} lies in none of its volumes {sorted(mounts)} or secrets {sorted(secrets)}")

    def environment(self, name: str) -> dict[str, str]:
        """The process environment compose gives service `name`, endpoints and paths made local."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("HOMEPWNER_")}
        for key, value in {**self.image_env, **self.services[name].get("environment", {})}.items():
            value = self.local(str(value))
            env[key] = str(self.host_path(name, value)) if key.startswith("HOMEPWNER_") and value.startswith("/") else value
        return env

    def published(self, name: str, variable: str) -> str:
        """The endpoint the host reaches what service `name` binds in `variable` at: the bind's
        port must be one of the service's published `ports`."""
        bind = re.fullmatch(r"tcp://\*:(\d+)", str(self.services[name]["environment"][variable]))
        assert bind, f"{name}: {variable} binds no tcp://*:PORT"
        port = int(bind.group(1))
        published = [str(mapping).split(":") for mapping in self.services[name].get("ports", [])]
        assert any(int(parts[-1]) == port for parts in published), f"{name}: port {port} ({variable}) is not published"
        return f"tcp://127.0.0.1:{self.ports[port]}"

    def start(self, name: str) -> None:
        service = self.services[name]
        command = [str(_executable(service["command"][0]))] + service["command"][1:]
        self.logs[name] = self.work / f"{name}.log"
        with open(self.logs[name], "ab") as log:
            self.processes[name] = subprocess.Popen(
                command, env=self.environment(name), stdout=log, stderr=subprocess.STDOUT, cwd=self.work)

    def restart(self, name: str) -> int:
        """As compose restarts a container: SIGTERM, then the same command and environment again
        (the same volumes); returns the exit code the process stopped with."""
        code = self.terminate([name])[name]
        self.start(name)
        return code

    def log(self, name: str) -> str:
        return self.logs[name].read_text(errors="replace") if name in self.logs else ""

    def health(self, name: str, timeout: float = 15) -> subprocess.CompletedProcess:
        """Runs the service's health check as compose would, until it passes or `timeout` passes."""
        test = self.services[name]["healthcheck"]["test"]
        command = [str(_executable("homepwner"))] + [
            str(self.host_path(name, part)) if part.startswith("/") else self.local(part) for part in test[2:]]
        deadline = time.monotonic() + timeout
        while True:
            result = subprocess.run(command, capture_output=True, text=True, timeout=30)
            if result.returncode == 0 or time.monotonic() > deadline:
                return result
            time.sleep(0.2)

    def grace(self, name: str) -> float:
        """The service's stop_grace_period in seconds (Docker's default: 10)."""
        match = re.fullmatch(r"(?:(\d+)m)?(?:(\d+)s)?", str(self.services[name].get("stop_grace_period", "10s")))
        assert match and any(match.groups()), f"{name}: stop_grace_period {self.services[name]['stop_grace_period']}"
        return int(match.group(1) or 0) * 60 + int(match.group(2) or 0)

    def terminate(self, names: list[str]) -> dict[str, int]:
        """SIGTERM to these processes at once; each one's exit code (-9: killed after its grace period)."""
        for name in names:
            if self.processes[name].poll() is None:
                self.processes[name].send_signal(signal.SIGTERM)
        codes = {}
        for name in names:
            process = self.processes[name]
            try:
                codes[name] = process.wait(timeout=self.grace(name))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
                codes[name] = -9
        return codes

    def stop(self) -> dict[str, int]:
        """Every process stopped as `docker compose stop` does: SIGTERM to a service only once
        those that depend on it have exited; each one's exit code."""
        codes: dict[str, int] = {}
        left = list(self.processes)
        while left:
            wave = [name for name in left
                    if not any(name in (self.services[other].get("depends_on") or []) for other in left)]
            codes |= self.terminate(wave or left)
            left = [name for name in left if name not in codes]
        return codes


def test_each_health_check_passes_against_its_service_and_fails_without_it(compose, tmp_path):
    topology = Topology(compose, tmp_path)
    names = list(compose["services"])
    try:
        for name in names:
            before = topology.health(name, timeout=0)
            assert before.returncode != 0, f"{name}'s check passed with nothing listening:\n{before.stdout}"
        for name in names:
            topology.start(name)
        for name in names:
            result = topology.health(name)
            log = (tmp_path / f"{name}.log").read_text(errors="replace")
            assert result.returncode == 0, f"{name}: {result.stdout}{result.stderr}\n{log}"
            assert "SERVING" in result.stdout, result.stdout
    finally:
        codes = topology.stop()
    assert codes == {name: 0 for name in names}, codes
