#!/usr/bin/env python3
"""Idle memory of the suite: `homepwner up` (everything in one process) and each executable
on its own, started on a fresh data folder with free loopback ports, read from
/proc/PID/status once every part answers its health check and again after a small workload
(items, one photo put and thumbnailed, a list) has settled.

    ops/footprint/idle.py BIN_DIR [--settle SECONDS] [--links] [--json]
    ops/footprint/idle.py BIN_DIR --own-vs-link [--rounds N] [--settle SECONDS] [--check MB] [--json]

Prints a Markdown table (VmRSS, VmHWM, threads). Standard library only; BIN_DIR holds the
release build's executables (ops/bench idle passes it). --links runs the four separate processes
from links named after them to BIN_DIR/homepwner (what ops/install and the images install).

--own-vs-link (issue 31, item 5): each service started alone, on a fresh data folder, from its own
executable (BIN_DIR/item-service …) and from a link of that name to BIN_DIR/homepwner, the two
alternated, read after --settle (3) seconds; the median of --rounds (5) starts of each. Then the
four started together as one suite (the workers pointed at the services), from their own
executables and from the links, PSS summed from /proc/PID/smaps_rollup. Both executables are read whole first, so every page of them is in the
page cache (as on a host that runs them). --check MB exits 1 when a link's median is more than MB
above its own executable's."""

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


PROGRAMS = ("item-service", "image-service", "capture-worker", "thumbnail-worker")


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


def links_to_homepwner(bins: Path) -> Path:
    """A temporary folder with item-service, image-service, … as links to BIN_DIR/homepwner."""
    links = Path(tempfile.mkdtemp(prefix="homepwner-links-"))
    for name in PROGRAMS:
        (links / name).symlink_to((bins / "homepwner").resolve())
    return links


def measure(bins: Path, separate: bool, settle: float, services: Path | None = None) -> list[dict]:
    """`services`: where the four executables are (default BIN_DIR; links to homepwner with --links)."""
    work = Path(tempfile.mkdtemp(prefix="homepwner-idle-"))
    suite = Suite(bins, work)
    e = suite.endpoint
    services = services or bins
    try:
        if separate:
            suite.start("item-service", [str(services / "item-service"), "--data-dir", str(work / "items"),
                                         "--rpc", e("item"), "--events", e("item-events"), "--image-service", e("image")])
            suite.start("image-service", [str(services / "image-service"), "--data-dir", str(work / "images"),
                                          "--rpc", e("image"), "--events", e("image-events")])
            suite.start("capture-worker", [str(services / "capture-worker"), "--rpc", e("capture"),
                                           "--item-service", e("item"), "--image-service", e("image")])
            suite.start("thumbnail-worker", [str(services / "thumbnail-worker"), "--rpc", e("thumbs"),
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


def rollup(pid: int) -> dict[str, int]:
    """Rss, Pss and private (clean + dirty) of the whole process, and the Rss of the executable's
    own mappings by kind: text (r-x), read-only (r--), writable (rw-)."""
    figures = {"Private": 0}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        key, _, value = line.partition(":")
        if key in ("Rss", "Pss"):
            figures[key] = int(value.split()[0]) * 1024
        elif key in ("Private_Clean", "Private_Dirty"):
            figures["Private"] += int(value.split()[0]) * 1024
    exe = os.path.realpath(f"/proc/{pid}/exe")
    kinds = {"r-x": "exe_text", "r--": "exe_ro", "rw-": "exe_rw"}
    for kind in kinds.values():
        figures[kind] = 0
    current = None
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        fields = line.split()
        if fields and "-" in fields[0] and not fields[0].endswith(":"):
            current = kinds.get(fields[1][:3]) if len(fields) > 5 and fields[5] == exe else None
        elif current and fields[0] == "Rss:":
            figures[current] += int(fields[1]) * 1024
    return figures


def alone_arguments(name: str, work: Path) -> list[str]:
    """The program's endpoints on free loopback ports (never the defaults another suite on this
    host may be serving), its data under `work`."""
    e = lambda: f"tcp://127.0.0.1:{free_port()}"
    if name == "item-service":
        return ["--rpc", e(), "--events", e(), "--data-dir", str(work), "--image-service", e()]
    if name == "image-service":
        return ["--rpc", e(), "--events", e(), "--data-dir", str(work)]
    return ["--rpc", e(), "--item-service", e(), "--image-service", e()]


def together_arguments(work: Path) -> dict[str, list[str]]:
    """The four as one suite: the workers and item-service pointed at the services' endpoints."""
    e = {name: f"tcp://127.0.0.1:{free_port()}" for name in ("item", "item-events", "image", "image-events", "capture", "thumbs")}
    return {"item-service": ["--rpc", e["item"], "--events", e["item-events"], "--data-dir", str(work / "items"),
                             "--image-service", e["image"]],
            "image-service": ["--rpc", e["image"], "--events", e["image-events"], "--data-dir", str(work / "images")],
            "capture-worker": ["--rpc", e["capture"], "--item-service", e["item"], "--image-service", e["image"]],
            "thumbnail-worker": ["--rpc", e["thumbs"], "--item-service", e["item"], "--image-service", e["image"]]}


def start(executable: Path, arguments: list[str], work: Path) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOMEPWNER_")}
    env["HOMEPWNER_LOG_LEVEL"] = "warning"
    return subprocess.Popen([str(executable), *arguments], env=env, cwd=work,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop(processes: list[subprocess.Popen]) -> None:
    for process in processes:
        process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def warm(path: Path) -> None:
    """Every page of the file in the page cache: the kernel maps a faulted page's cached
    neighbours with it (fault-around), so what is cached changes what a start maps."""
    with open(path, "rb") as f:
        while f.read(1 << 24):
            pass


def own_vs_link(bins: Path, rounds: int, settle: float) -> dict:
    links = links_to_homepwner(bins)
    try:
        variants = {"own": {name: bins / name for name in PROGRAMS},
                    "link": {name: links / name for name in PROGRAMS}}
        for path in [bins / "homepwner", *(bins / name for name in PROGRAMS)]:
            warm(path)
        alone = {variant: {name: [] for name in PROGRAMS} for variant in variants}
        together = {variant: [] for variant in variants}
        for round_index in range(rounds):
            order = ("own", "link") if round_index % 2 == 0 else ("link", "own")
            for name in PROGRAMS:
                for variant in order:
                    work = Path(tempfile.mkdtemp(prefix="homepwner-idle-"))
                    process = start(variants[variant][name], alone_arguments(name, work), work)
                    try:
                        time.sleep(settle)
                        if process.poll() is not None:
                            raise SystemExit(f"{variants[variant][name]} exited ({process.returncode})")
                        reading = status(process.pid) | rollup(process.pid)
                    finally:
                        stop([process])
                        shutil.rmtree(work, ignore_errors=True)
                    alone[variant][name].append(reading)
            for variant in order:
                work = Path(tempfile.mkdtemp(prefix="homepwner-idle-"))
                arguments = together_arguments(work)
                processes = [start(variants[variant][name], arguments[name], work) for name in PROGRAMS]
                try:
                    time.sleep(settle)
                    readings = {name: rollup(p.pid) for name, p in zip(PROGRAMS, processes)}
                finally:
                    stop(processes)
                    shutil.rmtree(work, ignore_errors=True)
                together[variant].append(readings)
        return {"rounds": rounds, "settle": settle, "alone": alone, "together": together}
    finally:
        shutil.rmtree(links, ignore_errors=True)


def median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def print_own_vs_link(result: dict) -> None:
    alone, together = result["alone"], result["together"]
    print(f"Each alone, read after {result['settle']:g} s; median of {result['rounds']} alternated starts (range). "
          "Executable: what VmRSS has of the executable file's own mappings.\n")
    print("| process | VmRSS own (MB) | VmRSS link (MB) | link − own (MB) | executable own / link (MB) |")
    print("|---|---:|---:|---:|---:|")
    for name in PROGRAMS:
        rss = {v: median([r["VmRSS"] for r in alone[v][name]]) for v in alone}
        exe = {v: median([r["exe_text"] + r["exe_ro"] + r["exe_rw"] for r in alone[v][name]]) for v in alone}
        span = lambda v: f"{mb(min(r['VmRSS'] for r in alone[v][name]))}–{mb(max(r['VmRSS'] for r in alone[v][name]))}"
        print(f"| {name} | {mb(rss['own'])} ({span('own')}) | {mb(rss['link'])} ({span('link')}) | "
              f"{(rss['link'] - rss['own']) / 1_000_000:+.1f} | {mb(exe['own'])} / {mb(exe['link'])} |")
    pss = {v: [sum(r["Pss"] for r in readings.values()) for readings in together[v]] for v in together}
    rss = {v: [sum(r["Rss"] for r in readings.values()) for readings in together[v]] for v in together}
    print(f"\nThe four together, PSS summed: own {mb(median(pss['own']))} MB, link {mb(median(pss['link']))} MB; "
          f"RSS summed: own {mb(median(rss['own']))} MB, link {mb(median(rss['link']))} MB (medians of {result['rounds']}).")


def mb(value: int) -> str:
    return f"{value / 1_000_000:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bins", type=Path)
    parser.add_argument("--settle", type=float, help="seconds idle before each reading (default 5; 3 with --own-vs-link)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--links", action="store_true",
                        help="run the four separate processes from links to BIN_DIR/homepwner, not their own executables")
    parser.add_argument("--own-vs-link", action="store_true",
                        help="each service alone from its own executable and from a link to homepwner")
    parser.add_argument("--rounds", type=int, default=5, help="--own-vs-link: starts of each (default 5)")
    parser.add_argument("--check", type=float, metavar="MB",
                        help="--own-vs-link: exit 1 when a link's median VmRSS is more than MB above its own executable's")
    args = parser.parse_args()
    if args.own_vs_link:
        result = own_vs_link(args.bins, args.rounds, 3.0 if args.settle is None else args.settle)
        if args.json:
            print(json.dumps(result, indent=2))
        else:
            print_own_vs_link(result)
        if args.check is not None:
            over = [name for name in PROGRAMS
                    if median([r["VmRSS"] for r in result["alone"]["link"][name]])
                    > median([r["VmRSS"] for r in result["alone"]["own"][name]]) + args.check * 1_000_000]
            if over:
                print(f"idle: from the link, above its own executable by more than {args.check:g} MB: {', '.join(over)}", file=sys.stderr)
                sys.exit(1)
        return
    settle = 5.0 if args.settle is None else args.settle
    links = links_to_homepwner(args.bins) if args.links else None
    try:
        rows = (measure(args.bins, separate=False, settle=settle)
                + measure(args.bins, separate=True, settle=settle, services=links))
    finally:
        if links:
            shutil.rmtree(links, ignore_errors=True)
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
