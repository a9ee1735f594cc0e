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

import pytest
import yaml

from conftest import REPO_ROOT, _executable, free_port

COMPOSE = REPO_ROOT / "compose" / "docker-compose.yml"


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


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
    """The compose services as local processes: every container port gets a free loopback port."""

    def __init__(self, compose: dict, work: Path):
        self.services = compose["services"]
        self.ports: dict[int, int] = {}
        for service in self.services.values():
            for value in service.get("environment", {}).values():
                for port in re.findall(r"tcp://\*:(\d+)", str(value)):
                    self.ports[int(port)] = free_port()
        self.work = work
        self.processes: dict[str, subprocess.Popen] = {}

    def local(self, text: str) -> str:
        """tcp://*:N, tcp://NAME:N and tcp://127.0.0.1:N as the loopback endpoint of port N."""
        def endpoint(match: re.Match) -> str:
            port = int(match.group(2))
            return f"tcp://127.0.0.1:{self.ports.get(port, port)}"
        return re.sub(r"tcp://([*A-Za-z0-9_.-]+):(\d+)", endpoint, text)

    def start(self, name: str) -> None:
        service = self.services[name]
        env = {k: v for k, v in os.environ.items() if not k.startswith("HOMEPWNER_")}
        for key, value in service.get("environment", {}).items():
            env[key] = self.local(str(value))
        if "HOMEPWNER_DATA_DIR" in env:
            env["HOMEPWNER_DATA_DIR"] = str(self.work / name)
        command = [str(_executable(service["command"][0]))] + service["command"][1:]
        log = open(self.work / f"{name}.log", "wb")
        self.processes[name] = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=self.work)

    def health(self, name: str, timeout: float = 15) -> subprocess.CompletedProcess:
        """Runs the service's health check as compose would, until it passes or `timeout` passes."""
        test = self.services[name]["healthcheck"]["test"]
        command = [str(_executable("homepwner"))] + [self.local(part) for part in test[2:]]
        deadline = time.monotonic() + timeout
        while True:
            result = subprocess.run(command, capture_output=True, text=True, timeout=30)
            if result.returncode == 0 or time.monotonic() > deadline:
                return result
            time.sleep(0.2)

    def stop(self) -> dict[str, int]:
        for process in self.processes.values():
            process.send_signal(signal.SIGTERM)
        codes = {}
        for name, process in self.processes.items():
            try:
                codes[name] = process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                codes[name] = process.wait()
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
