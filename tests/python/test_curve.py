"""CURVE from outside: item-service with keys made by `homepwner keys`, called by pyzmq.

The documented client (docs/protocol.md §16) runs as written; a client without keys or with an
unlisted key gets no reply while the allowed one is served.
"""
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import zmq
import zmq.auth

from conftest import REPO_ROOT, _executable, free_port


def _homepwner(*args: str) -> str:
    result = subprocess.run([str(_executable("homepwner")), *args], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def _health_frames(pb, request_id: int) -> list[bytes]:
    header = pb.rpc.RequestHeader(method="/homepwner.v1.Health/Check", request_id=request_id, timeout_ms=2000)
    return [b"", header.SerializeToString(), pb.health.HealthCheckRequest().SerializeToString()]


def test_curve_keys_from_outside(pb, tmp_path):
    keys = tmp_path / "keys"
    _homepwner("keys", "init", str(keys))
    _homepwner("keys", "gen", "dashboard", "--dir", str(keys))
    _homepwner("keys", "allow", "reader", str(keys / "dashboard.key"), "--file", str(keys / "allowed_keys"))
    assert oct((keys / "dashboard.key_secret").stat().st_mode & 0o777) == "0o600"

    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOMEPWNER_")}
    log = open(tmp_path / "item.log", "wb")
    process = subprocess.Popen(
        [str(_executable("item-service")), "--rpc", f"tcp://0.0.0.0:{port}", "--events", f"tcp://0.0.0.0:{free_port()}",
         "--data-dir", str(tmp_path / "data"), "--image-service", f"tcp://127.0.0.1:{free_port()}",
         "--server-secret-key", str(keys / "server.key_secret"), "--allowed-keys", str(keys / "allowed_keys")],
        stdout=log, stderr=subprocess.STDOUT, env=env)
    endpoint = f"tcp://127.0.0.1:{port}"
    context = zmq.Context()
    try:
        # The documented example, as written, with the reader key.
        doc = (REPO_ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
        match = re.search(r"<!-- example: curve-client -->\s*```python\n(.*?)```", doc, re.S)
        assert match, "docs/protocol.md has no curve-client example"
        script = tmp_path / "curve_client.py"
        script.write_text(match.group(1))
        generated = Path(pb.rpc.__file__).resolve().parents[2]
        deadline = time.monotonic() + 15
        while True:
            result = subprocess.run(
                [sys.executable, str(script), endpoint, str(keys / "dashboard.key_secret"), str(keys / "server.key")],
                capture_output=True, text=True, timeout=30, env={**os.environ, "PYTHONPATH": str(generated)})
            if result.returncode == 0 or time.monotonic() > deadline or process.poll() is not None:
                break
            time.sleep(0.2)
        assert result.returncode == 0, result.stdout + result.stderr + (tmp_path / "item.log").read_text()
        assert "item-service SERVING" in result.stdout
        assert "0 items" in result.stdout
        assert "PERMISSION_DENIED" in result.stdout and "needs admin" in result.stdout, result.stdout

        # Strangers: no keys at all, and a key nobody allowed. Neither gets a reply.
        plain = context.socket(zmq.DEALER)
        stranger_public, stranger_secret = zmq.curve_keypair()
        server_public, _ = zmq.auth.load_certificate(str(keys / "server.key"))
        stranger = context.socket(zmq.DEALER)
        stranger.curve_publickey, stranger.curve_secretkey, stranger.curve_serverkey = (
            stranger_public, stranger_secret, server_public)
        for index, socket in enumerate([plain, stranger]):
            socket.setsockopt(zmq.LINGER, 0)
            socket.connect(endpoint)
            socket.send_multipart(_health_frames(pb, index + 1))
        time.sleep(1.5)
        for socket in [plain, stranger]:
            assert socket.poll(0, zmq.POLLIN) == 0, "a client without an allowed key got a reply"
            socket.close()

        # The allowed key is still served.
        public, secret = zmq.auth.load_certificate(str(keys / "dashboard.key_secret"))
        allowed = context.socket(zmq.DEALER)
        allowed.curve_publickey, allowed.curve_secretkey, allowed.curve_serverkey = public, secret, server_public
        allowed.setsockopt(zmq.LINGER, 0)
        allowed.connect(endpoint)
        allowed.send_multipart(_health_frames(pb, 9))
        assert allowed.poll(5000, zmq.POLLIN), "the allowed key got no reply"
        reply = pb.rpc.ResponseHeader.FromString(allowed.recv_multipart()[1])
        assert reply.code == 0 and reply.request_id == 9
        allowed.close()

        # SIGHUP reloads the allowed keys; it does not stop the service.
        process.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 10
        while "SIGHUP: reloading the allowed keys" not in (tmp_path / "item.log").read_text():
            assert time.monotonic() < deadline, (tmp_path / "item.log").read_text()
            time.sleep(0.1)
        assert process.poll() is None
    finally:
        process.terminate()
        process.wait(timeout=20)
        log.close()
        context.term()


def test_binding_beyond_loopback_without_keys_is_refused(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOMEPWNER_")}
    result = subprocess.run(
        [str(_executable("item-service")), "--rpc", f"tcp://0.0.0.0:{free_port()}", "--events", f"tcp://127.0.0.1:{free_port()}",
         "--data-dir", str(tmp_path / "data")],
        capture_output=True, text=True, timeout=30, env=env)
    assert result.returncode == 1
    output = result.stdout + result.stderr
    assert "refusing to bind" in output and "homepwner keys init" in output and "--insecure" in output, output
