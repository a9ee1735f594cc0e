"""The wire protocol as a Python client sees it (docs/protocol.md), against a real item-service.

Only Health is served by item-service today; requests to methods that do not exist use
names that never will (e.g. "/homepwner.v1.Health/Explode"), so these tests keep passing as
the ItemService handlers land.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import zmq

from homepwner_client import Client

HEALTH_CHECK = "/homepwner.v1.Health/Check"
REPO_ROOT = Path(__file__).resolve().parents[2]


def test_health_check_over_dealer(client, pb):
    health = pb.health.HealthCheckResponse
    request_id = client.send(HEALTH_CHECK, pb.health.HealthCheckRequest(), timeout_ms=5000)
    reply = client.receive_for(request_id, 6000)
    assert reply.header.request_id == request_id
    assert reply.header.code == pb.rpc.OK
    assert reply.header.message == ""
    response = health.FromString(reply.body)
    assert response.status == health.SERVING
    assert response.process == "item-service"
    assert "homepwner.v1.Health" in response.services
    assert response.version != ""


def test_health_check_over_req(item_service, pb, zmq_context):
    health = pb.health.HealthCheckResponse
    with Client(item_service.rpc, pb, socket_type=zmq.REQ, context=zmq_context) as req:
        for _ in range(3):  # REQ: strictly one request, then its reply
            request_id = req.send(HEALTH_CHECK, pb.health.HealthCheckRequest(), timeout_ms=5000)
            reply = req.receive(6000)
            assert reply.header.request_id == request_id
            assert reply.header.code == pb.rpc.OK
            assert health.FromString(reply.body).status == health.SERVING


def test_fifty_pipelined_requests_matched_by_request_id(client, pb):
    health = pb.health.HealthCheckResponse
    # Odd ids ask for a service that does not exist, so each reply's content says which request it answers.
    expected = {}
    for n in range(50):
        service = "homepwner.v1.Nope" if n % 2 else ""
        request_id = client.send(HEALTH_CHECK, pb.health.HealthCheckRequest(service=service), timeout_ms=5000)
        expected[request_id] = health.SERVICE_UNKNOWN if n % 2 else health.SERVING
    assert len(expected) == 50

    replies = {}
    while len(replies) < 50:
        reply = client.receive(6000)
        assert reply.header.request_id in expected, f"unexpected request_id {reply.header.request_id}"
        assert reply.header.request_id not in replies, f"two replies to {reply.header.request_id}"
        replies[reply.header.request_id] = reply
    for request_id, reply in replies.items():
        assert reply.header.code == pb.rpc.OK
        assert health.FromString(reply.body).status == expected[request_id]


def test_unknown_method_is_unimplemented_naming_it(client, pb):
    method = "/homepwner.v1.Health/Explode"
    reply = client.call_raw(method, b"", timeout_ms=2000)
    assert reply.header.code == pb.rpc.UNIMPLEMENTED == 12
    assert method in reply.header.message
    assert reply.body == b""


def test_empty_method_is_invalid_argument(client, pb):
    reply = client.call_raw("", b"", timeout_ms=2000)
    assert reply.header.code == pb.rpc.INVALID_ARGUMENT
    assert "no method" in reply.header.message


def test_header_that_does_not_parse_is_invalid_argument(client, pb):
    # Field 1 (method) claims 100 bytes; only 2 follow.
    client.send_frames([b"", bytes([0x0A, 100]) + b"AB", b""])
    reply = client.receive(2000)
    assert reply.header.code == pb.rpc.INVALID_ARGUMENT == 3
    assert reply.header.request_id == 0  # the header could not be read, so neither could its id
    assert "homepwner.v1.RequestHeader" in reply.header.message
    assert reply.body == b""


@pytest.mark.parametrize("frames, got", [
    (lambda header: [header, b""], 2),               # the DEALER forgot the empty delimiter
    (lambda header: [b"", header], 2),               # no body frame (an empty body is still a frame)
    (lambda header: [b"", header, b"", b""], 4),
    (lambda header: [b""], 1),
])
def test_wrong_frame_count_is_invalid_argument(client, pb, frames, got):
    header = pb.rpc.RequestHeader(method=HEALTH_CHECK, request_id=77).SerializeToString()
    client.send_frames(frames(header))
    reply = client.receive(2000)
    assert reply.header.code == pb.rpc.INVALID_ARGUMENT
    assert reply.header.request_id == 0
    assert f"got {got}" in reply.header.message
    # The server still answers the same connection afterwards.
    assert client.health_check().status == pb.health.HealthCheckResponse.SERVING


def test_non_empty_delimiter_is_invalid_argument(client, pb):
    header = pb.rpc.RequestHeader(method=HEALTH_CHECK, request_id=78).SerializeToString()
    client.send_frames([b"x", header, b""])
    reply = client.receive(2000)
    assert reply.header.code == pb.rpc.INVALID_ARGUMENT
    assert "empty delimiter" in reply.header.message


def test_body_that_does_not_parse_is_invalid_argument_with_request_id(client, pb):
    reply = client.call_raw(HEALTH_CHECK, b"\xff\xff\xff", timeout_ms=2000)
    assert reply.header.code == pb.rpc.INVALID_ARGUMENT
    assert "homepwner.v1.HealthCheckRequest" in reply.header.message
    assert reply.body == b""


def test_unknown_service_is_service_unknown(client, pb):
    health = pb.health.HealthCheckResponse
    response = client.health_check("homepwner.v1.Nope")
    assert response.status == health.SERVICE_UNKNOWN
    assert response.process == "item-service"
    assert client.health_check("homepwner.v1.Health").status == health.SERVING


def test_timeout_ms_is_honoured_in_the_reply(client, pb):
    for timeout_ms in (1000, 30000):
        request_id = client.send(HEALTH_CHECK, pb.health.HealthCheckRequest(), request_id=4242 + timeout_ms,
                                 timeout_ms=timeout_ms)
        started = time.monotonic()
        reply = client.receive_for(request_id, timeout_ms)
        assert reply.header.request_id == request_id
        assert reply.header.code == pb.rpc.OK
        assert (time.monotonic() - started) * 1000 < timeout_ms


def test_request_bytes_match_the_documented_example(pb):
    # docs/protocol.md, "A real exchange": request_id 1, timeout_ms 1000, empty HealthCheckRequest.
    header = pb.rpc.RequestHeader(method=HEALTH_CHECK, request_id=1, timeout_ms=1000)
    assert header.SerializeToString().hex(" ") == (
        "0a 1a 2f 68 6f 6d 65 70 77 6e 65 72 2e 76 31 2e 48 65 61 6c 74 68 2f 43 68 65 63 6b 10 01 18 e8 07")
    assert pb.health.HealthCheckRequest().SerializeToString() == b""
    assert pb.rpc.ResponseHeader(request_id=1, code=0).SerializeToString() == bytes([0x08, 0x01])


def test_documented_python_example_runs(item_service, pb, tmp_path):
    """The minimal client printed in docs/protocol.md works as written."""
    doc = (REPO_ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    match = re.search(r"<!-- example: minimal-client -->\s*```python\n(.*?)```", doc, re.S)
    assert match, "docs/protocol.md has no minimal-client example"
    script = tmp_path / "minimal_client.py"
    script.write_text(match.group(1))
    generated = Path(pb.rpc.__file__).resolve().parents[2]  # the dir holding homepwner/v1/*_pb2.py
    result = subprocess.run(
        [sys.executable, str(script), item_service.rpc],
        capture_output=True, text=True, timeout=30,
        env={**os.environ, "PYTHONPATH": str(generated)},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SERVING" in result.stdout
    assert "item-service" in result.stdout
