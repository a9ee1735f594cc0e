"""The one executable's layout (issue 31, item 5; BENCHMARKS.md, "idle memory per process"): a
release build on Linux links homepwner with lld in the order of Sources/homepwner/Link/order.txt,
so each service started by its link maps less of it idle than its own executable did. Read from
the executable's symbols by ops/footprint/order --check, not by timing or memory."""

from __future__ import annotations

import re
import subprocess

import pytest

from conftest import REPO_ROOT, _executable

LINK = REPO_ROOT / "Sources" / "homepwner" / "Link"


def test_the_order_file_names_functions_of_every_service():
    lines = (LINK / "order.txt").read_text().splitlines()
    names = [line for line in lines if line and not line.startswith("#")]
    # Every name is one symbol: lld skips a line it cannot find, but reads "a b" as one name.
    assert names and all(re.fullmatch(r"\S+", name) for name in names)
    assert len(set(names)) == len(names)
    header = "\n".join(line for line in lines if line.startswith("#"))
    for service in ("item-service", "image-service", "capture-worker", "thumbnail-worker"):
        assert re.search(rf"#   idle (\S+\+)?{service}(\+\S+)?: \d+", header), service
    # The start-up path every service shares comes first; the Swift runtime's own start is in it.
    assert "swift_addNewDSOImage" in names[:50]
    assert "INSERT BEFORE .text" in (LINK / "unnamed.ld").read_text()


def test_a_release_build_lays_homepwner_out_by_the_order_file():
    homepwner = _executable("homepwner")
    comment = subprocess.run(["readelf", "-p", ".comment", str(homepwner)], capture_output=True, text=True, timeout=60)
    if "Linker: LLD" not in comment.stdout:
        pytest.skip(f"{homepwner} was not linked by lld: a debug build (release builds use the order file)")
    check = subprocess.run([str(REPO_ROOT / "ops/footprint/order"), "--check", "--bin", str(homepwner.parent)],
                           capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "laid out in order" in check.stdout
