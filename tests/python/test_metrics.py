"""Metrics/Stats and the scrape endpoint of a real item-service, from docs/protocol.md 8.1:
calls counted by method and status code, the Python client's Stats call, and the Prometheus
text parsed by prometheus_client as a Prometheus server would."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
import uuid

import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import _executable, _start, _stop, free_port
from homepwner_client import Client, RpcError


@pytest.fixture(scope="module")
def metered(image_service, pb, zmq_context, tmp_path_factory):
    """An item-service of its own with --metrics on a free loopback port."""
    port = free_port()
    service = _start("item-service", ["--image-service", image_service.rpc, "--metrics", f"tcp://127.0.0.1:{port}"],
                     pb, zmq_context, tmp_path_factory)
    yield service, port
    _stop("item-service", service)


def scrape(port: int, path: str = "/metrics") -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as response:
            return response.status, response.headers.get("Content-Type", ""), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("Content-Type", ""), error.read().decode()


def test_stats_counts_each_call_by_method_and_code(metered, pb, zmq_context):
    service, _ = metered
    with Client(service.rpc, pb, context=zmq_context) as client:
        for name in ("Lamp", "Chair", "Desk"):
            client.call("/homepwner.v1.ItemService/CreateItem", pb.items.CreateItemRequest(name=name), pb.items.Item)
        with pytest.raises(RpcError) as missing:
            client.call("/homepwner.v1.ItemService/GetItem", pb.items.GetItemRequest(key=str(uuid.uuid4())), pb.items.Item)
        assert missing.value.header.code == pb.rpc.NOT_FOUND
        stats = client.call("/homepwner.v1.Metrics/Stats", pb.metrics.ProcessStatsRequest(),
                            pb.metrics.ProcessStatsResponse)
    assert stats.process == "item-service"
    assert stats.rss_bytes > 1 << 20 and stats.peak_rss_bytes >= stats.rss_bytes
    rows = {row.method: row for row in stats.methods}
    create = rows["/homepwner.v1.ItemService/CreateItem"]
    assert create.calls == 3
    assert [(c.code, c.count) for c in create.codes] == [(pb.rpc.OK, 3)]
    assert 0 < create.p50_us <= create.p99_us <= create.max_us
    get = rows["/homepwner.v1.ItemService/GetItem"]
    assert [(c.code, c.count) for c in get.codes] == [(pb.rpc.NOT_FOUND, 1)]
    assert "" in rows, "the row for calls to methods not served here"
    names = {figure.name for figure in stats.figures}
    assert {"homepwner_pending_cascades", "homepwner_queue_ready", "homepwner_queue_oldest_ready_age_seconds"} <= names
    queues = {label.value for figure in stats.figures for label in figure.labels if label.name == "queue"}
    assert queues == {"capture", "cascade"}


def test_the_scrape_endpoint_serves_the_same_figures_as_prometheus_text(metered, pb, zmq_context):
    service, port = metered
    with Client(service.rpc, pb, context=zmq_context) as client:
        client.call("/homepwner.v1.ItemService/CreateItem", pb.items.CreateItemRequest(name="Scraped"), pb.items.Item)
        client.call_raw("/homepwner.v1.Nope/Nothing")
    status, content_type, text = scrape(port)
    assert status == 200
    assert content_type.startswith("text/plain") and "version=0.0.4" in content_type
    families = {family.name: family for family in text_string_to_metric_families(text)}
    requests = families["homepwner_rpc_requests"]
    assert requests.type == "counter"
    created = [s for s in requests.samples
               if s.labels.get("method") == "/homepwner.v1.ItemService/CreateItem" and s.labels.get("code") == "OK"]
    assert len(created) == 1 and created[0].value >= 1
    assert created[0].labels["process"] == "item-service"
    assert any(s.labels.get("method") == "none" and s.labels.get("code") == "UNIMPLEMENTED" for s in requests.samples)
    duration = families["homepwner_rpc_request_duration_seconds"]
    assert duration.type == "summary"
    assert {s.labels.get("quantile") for s in duration.samples if "quantile" in s.labels} == {"0.5", "0.9", "0.99"}
    assert families["homepwner_resident_memory_bytes"].samples[0].value > 1 << 20
    ready = {s.labels["queue"]: s.value for s in families["homepwner_queue_ready"].samples}
    assert set(ready) == {"capture", "cascade"}
    assert families["homepwner_pending_cascades"].samples[0].value == 0


def test_the_scrape_endpoint_refuses_what_is_not_a_scrape(metered):
    _, port = metered
    assert scrape(port, "/nope")[0] == 404
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        raw.sendall(b"DELETE /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        assert raw.recv(64).startswith(b"HTTP/1.1 405")
    # And it still answers a scrape afterwards.
    assert scrape(port)[0] == 200


def test_homepwner_up_serves_all_four_parts_on_one_scrape_endpoint(tmp_path, pb, zmq_context):
    """`homepwner up --metrics`: one endpoint, every sample labelled with its part; the variable
    HOMEPWNER_METRICS sets it as well as the flag."""
    ports = {name: free_port() for name in ("item", "item-events", "image", "image-events", "capture", "thumbnail", "metrics")}
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOMEPWNER_")}
    env["HOMEPWNER_METRICS"] = f"tcp://127.0.0.1:{ports['metrics']}"
    endpoint = {name: f"tcp://127.0.0.1:{port}" for name, port in ports.items()}
    log = open(tmp_path / "up.log", "wb")
    up = subprocess.Popen(
        [str(_executable("homepwner")), "up", "--data-dir", str(tmp_path / "data"),
         "--item-rpc", endpoint["item"], "--item-events", endpoint["item-events"],
         "--image-rpc", endpoint["image"], "--image-events", endpoint["image-events"],
         "--capture-worker-rpc", endpoint["capture"], "--thumbnail-worker-rpc", endpoint["thumbnail"]],
        env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                status, _, text = scrape(ports["metrics"])
                if status == 200 and text.count("homepwner_process_info{") == 4:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, (tmp_path / "up.log").read_text(errors="replace")
            time.sleep(0.2)
        families = {family.name: family for family in text_string_to_metric_families(text)}
        parts = {s.labels["process"] for s in families["homepwner_process_info"].samples}
        assert parts == {"item-service", "image-service", "capture-worker", "thumbnail-worker"}
        slots = {s.labels["queue"] for s in families["homepwner_worker_job_slots"].samples}
        assert slots == {"capture", "thumbnails"}
        assert {s.labels["process"] for s in families["homepwner_cache_entries"].samples} == {"image-service"}
    finally:
        up.send_signal(signal.SIGTERM)
        assert up.wait(timeout=20) == 0, (tmp_path / "up.log").read_text(errors="replace")


def test_metrics_beyond_loopback_need_a_bearer_token(image_service, pb, zmq_context, tmp_path_factory, tmp_path):
    """docs/protocol.md 8.1: a scrape endpoint other machines reach asks for a bearer token
    (the file `homepwner keys init` writes as metrics.token), as a Prometheus server sends it."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOMEPWNER_")}
    refused = subprocess.run(
        [str(_executable("item-service")), "--rpc", f"tcp://127.0.0.1:{free_port()}", "--events", f"tcp://127.0.0.1:{free_port()}",
         "--data-dir", str(tmp_path / "refused"), "--image-service", image_service.rpc, "--metrics", f"tcp://0.0.0.0:{port}"],
        capture_output=True, text=True, timeout=30, env=env)
    assert refused.returncode == 1
    assert "--metrics-token-file" in refused.stdout + refused.stderr, refused.stdout + refused.stderr

    keys = tmp_path / "keys"
    subprocess.run([str(_executable("homepwner")), "keys", "init", str(keys)], check=True, capture_output=True, timeout=30)
    token = (keys / "metrics.token").read_text().strip()
    service = _start("item-service", ["--image-service", image_service.rpc, "--metrics", f"tcp://0.0.0.0:{port}",
                                      "--metrics-token-file", str(keys / "metrics.token")], pb, zmq_context, tmp_path_factory)
    try:
        status, _, _ = scrape(port)
        assert status == 401
        request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", headers={"Authorization": "Bearer wrong-token-0123456789"})
        with pytest.raises(urllib.error.HTTPError) as wrong:
            urllib.request.urlopen(request, timeout=10)
        assert wrong.value.code == 401
        request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(request, timeout=10) as response:
            text = response.read().decode()
        families = {family.name for family in text_string_to_metric_families(text)}
        assert "homepwner_rpc_requests" in families or any(name.startswith("homepwner_") for name in families), families
    finally:
        _stop("item-service", service)
