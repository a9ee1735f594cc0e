"""`homepwner-bench load` (ops/bench load) runs, briefly: 8 clients for 12 s and 5 s of
overload against the four executables of the same build, and passes its own verdict (no hang,
every RESOURCE_EXHAUSTED with retry_after_ms, no process ended). RELIABILITY.md, Soak."""

from __future__ import annotations

import json
import subprocess

from conftest import REPO_ROOT, _executable


def test_a_short_load_run_passes_and_reports_every_kind_of_call():
    bench = _executable("homepwner-bench")
    for name in ("item-service", "image-service", "capture-worker", "thumbnail-worker"):
        _executable(name)  # the bench starts the ones beside it
    run = subprocess.run(
        [str(bench), "load", "--minutes", "0.2", "--clients", "8", "--overload-seconds", "5", "--json"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    report = json.loads(run.stdout)
    assert report["pass"] and report["failures"] == []
    assert report["hangs"] == [] and report["missing_retry_after"] == []
    methods = {row["method"]: row for row in report["methods"]}
    for method in ("CreateItem", "PutImage", "AppendUpload", "CommitUpload", "GetImage", "GetRendition",
                   "AttachPhoto", "Capture", "EnqueueThumbnails", "Check"):
        assert methods[method]["statuses"].get("OK", 0) > 0, method
    # Overload is answered 8 (with retry_after_ms, checked above) or 14, never anything else.
    assert report["overload_other_answers"] == []
    for row in report["overload_methods"]:
        assert set(row["statuses"]) <= {"OK", "RESOURCE_EXHAUSTED", "UNAVAILABLE"}, row
    # Every sample saw the four processes.
    assert all(p["rss_bytes"] > 0 and p["fds"] > 0 for s in report["samples"] for p in s["processes"])
