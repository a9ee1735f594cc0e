#!/usr/bin/env python3
"""Idle memory of the suite: `homepwner up` (everything in one process) and each executable
on its own, started on a fresh data folder with free loopback ports, read from
/proc/PID/status once every part answers its health check and again after a small workload
(items, one photo put and thumbnailed, a list) has settled.

    ops/footprint/idle.py BIN_DIR [--settle SECONDS] [--json]

Prints a Markdown table (VmRSS, VmHWM, threads). Standard library only; BIN_DIR holds the
release build's executables (ops/bench idle passes it)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SAMPLE = Path(__file__).resolve().parents[2] / "Tests" / "Fixtures" / "exif-orientation" / "Landscape_1.jpg"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status(pid: int) -> dict[str, int]:
    figures = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            figures[key] = int(value.split()[0]) * 1024
        elif key == "Threads":
            figures[key] = int(value)
    return figures


class Suite:
    def __init__(self, bins: Path, work: Path):
        self.bins = bins
        self.work = work
        self.ports = {name: free_port() for name in ("item", "item-events", "image", "image-events", "capture", "thumbs")}
        self.processes: dict[str, subprocess.Popen] = {}

    def endpoint(self, name: str) -> str:
        return f"tcp://127.0.0.1:{self.ports[name]}"

    def cli(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run([str(self.bins / "homepwner"), *args, "--item", self.endpoint("item"),
                               "--image", self.endpoint("image")], capture_output=True, text=True, timeout=timeout)

    def start(self, label: str, command: list[str]) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("HOMEPWNER_")}
        env["HOMEPWNER_LOG_LEVEL"] = "warning"
        log = open(self.work / f"{label}.log", "wb")
        self.processes[label] = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=self.work)

    def healthy(self, what: str, flag: str, port: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while True:
            result = subprocess.run([str(self.bins / "homepwner"), "health", what, flag, self.endpoint(port),
                                     "--timeout", "1000"], capture_output=True, text=True)
            if result.returncode == 0:
                return
            if time.monotonic() > deadline:
                raise SystemExit(f"{what} never became healthy: {result.stdout}{result.stderr}")
            time.sleep(0.2)

    def workload(self) -> None:
        """100 items, one photo captured (capture worker, thumbnails by the thumbnail worker), a list."""
        for index in range(100):
            self.check("item", "add", f"Item {index}", "--value", str(index * 10))
        item = json.loads(self.check("item", "add", "Camera", "--json").stdout)["key"]
        self.check("capture", item, "--file", str(SAMPLE), "--square", "--wait", timeout=120)
        self.check("thumbs", "batch", "--missing", timeout=120)
        self.check("item", "ls", "--json")

    def check(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        result = self.cli(*args, timeout=timeout)
        if result.returncode != 0:
            raise SystemExit(f"homepwner {' '.join(args)} failed ({result.returncode}): {result.stdout}{result.stderr}")
        return result

    def stop(self) -> None:
        for process in self.processes.values():
            process.send_signal(signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()


def measure(bins: Path, separate: bool, settle: float) -> list[dict]:
    work = Path(tempfile.mkdtemp(prefix="homepwner-idle-"))
    suite = Suite(bins, work)
    e = suite.endpoint
    try:
        if separate:
            suite.start("item-service", [str(bins / "item-service"), "--data-dir", str(work / "items"),
                                         "--rpc", e("item"), "--events", e("item-events"), "--image-service", e("image")])
            suite.start("image-service", [str(bins / "image-service"), "--data-dir", str(work / "images"),
                                          "--rpc", e("image"), "--events", e("image-events")])
            suite.start("capture-worker", [str(bins / "capture-worker"), "--rpc", e("capture"),
                                           "--item-service", e("item"), "--image-service", e("image")])
            suite.start("thumbnail-worker", [str(bins / "thumbnail-worker"), "--rpc", e("thumbs"),
                                             "--item-service", e("item"), "--image-service", e("image")])
        else:
            suite.start("homepwner up", [str(bins / "homepwner"), "up", "--data-dir", str(work / "data"),
                                         "--item-rpc", e("item"), "--item-events", e("item-events"),
                                         "--image-rpc", e("image"), "--image-events", e("image-events"),
                                         "--capture-worker-rpc", e("capture"), "--thumbnail-worker-rpc", e("thumbs")])
        suite.healthy("item", "--item", "item")
        suite.healthy("image", "--image", "image")
        suite.healthy("capture-worker", "--capture-worker", "capture")
        suite.healthy("thumbnail-worker", "--thumbnail-worker", "thumbs")
        time.sleep(settle)
        rows = {label: {"process": label, "idle": status(p.pid)} for label, p in suite.processes.items()}
        suite.workload()
        time.sleep(settle)
        for label, process in suite.processes.items():
            rows[label]["after_work"] = status(process.pid)
        return list(rows.values())
    finally:
        suite.stop()
        shutil.rmtree(work, ignore_errors=True)


def mb(value: int) -> str:
    return f"{value / 1_000_000:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bins", type=Path)
    parser.add_argument("--settle", type=float, default=5.0, help="seconds idle before each reading (default 5)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = measure(args.bins, separate=False, settle=args.settle) + measure(args.bins, separate=True, settle=args.settle)
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print("| process | idle RSS (MB) | idle threads | RSS after work (MB) | peak RSS (MB) | threads |")
    print("|---|---:|---:|---:|---:|---:|")
    for row in rows:
        idle, work = row["idle"], row["after_work"]
        print(f"| {row['process']} | {mb(idle['VmRSS'])} | {idle['Threads']} | {mb(work['VmRSS'])} | {mb(work['VmHWM'])} | {work['Threads']} |")
    total = sum(row["idle"]["VmRSS"] for row in rows[1:])
    print(f"\nThe four separate processes together, idle: {mb(total)} MB.", file=sys.stderr)


if __name__ == "__main__":
    main()
