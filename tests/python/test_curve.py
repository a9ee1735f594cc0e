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

        # The allowed key, asking after them, is served; by then the strangers would have been too.
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
        for socket in [plain, stranger]:
            assert socket.poll(0, zmq.POLLIN) == 0, "a client without an allowed key got a reply"
            socket.close()

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


def _curve_socket(context, kind, keys: Path, name: str):
    """A pyzmq socket of `kind` calling with NAME.key_secret and the suite's server key."""
    public, secret = zmq.auth.load_certificate(str(keys / f"{name}.key_secret"))
    server_public, _ = zmq.auth.load_certificate(str(keys / "server.key"))
    socket = context.socket(kind)
    socket.curve_publickey, socket.curve_secretkey, socket.curve_serverkey = public, secret, server_public
    socket.setsockopt(zmq.LINGER, 0)
    return socket


def test_a_key_revoked_while_subscribed_hears_no_more_events(pb, tmp_path):
    """docs/protocol.md §16: revoking a key ends its event subscription too, not only its calls."""
    keys = tmp_path / "keys"
    _homepwner("keys", "init", str(keys))
    _homepwner("keys", "gen", "dashboard", "--dir", str(keys))
    allowed_file = keys / "allowed_keys"
    _homepwner("keys", "allow", "reader", str(keys / "dashboard.key"), "--file", str(allowed_file))
    rpc, events = f"tcp://127.0.0.1:{free_port()}", f"tcp://127.0.0.1:{free_port()}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOMEPWNER_")}
    log_path = tmp_path / "item.log"
    log = open(log_path, "wb")
    process = subprocess.Popen(
        [str(_executable("item-service")), "--rpc", rpc, "--events", events, "--data-dir", str(tmp_path / "data"),
         "--image-service", f"tcp://127.0.0.1:{free_port()}",
         "--server-secret-key", str(keys / "server.key_secret"), "--allowed-keys", str(allowed_file)],
        stdout=log, stderr=subprocess.STDOUT, env=env)
    context = zmq.Context()
    admin = _curve_socket(context, zmq.DEALER, keys, "admin")
    admin.connect(rpc)
    subscribers = {}
    for name in ("dashboard", "admin"):
        subscriber = _curve_socket(context, zmq.SUB, keys, name)
        subscriber.setsockopt(zmq.SUBSCRIBE, b"item.")
        subscriber.connect(events)
        subscribers[name] = subscriber
    request_ids = iter(range(1, 1_000_000))

    def create(name: str) -> str:
        header = pb.rpc.RequestHeader(method="/homepwner.v1.ItemService/CreateItem", request_id=next(request_ids),
                                      timeout_ms=5000, idempotency_key=f"create-{name}")
        admin.send_multipart([b"", header.SerializeToString(), pb.items.CreateItemRequest(name=name).SerializeToString()])
        assert admin.poll(10_000, zmq.POLLIN), "no reply to CreateItem:\n" + log_path.read_text()
        frames = admin.recv_multipart()
        assert pb.rpc.ResponseHeader.FromString(frames[1]).code == 0
        return pb.items.Item.FromString(frames[2]).key

    def heard(subscriber) -> list[str]:
        names = []
        while subscriber.poll(0, zmq.POLLIN):
            topic, body = subscriber.recv_multipart()[:2]
            if topic == b"item.created":
                names.append(pb.events.ItemEvent.FromString(body).item.name)
        return names

    def create_until_heard(prefix: str, subscriber) -> None:
        # A subscription takes effect once it reaches the publisher: create until one is heard.
        deadline = time.monotonic() + 15
        for n in range(1_000):
            create(f"{prefix}-{n}")
            if subscriber.poll(100, zmq.POLLIN) and any(name.startswith(prefix) for name in heard(subscriber)):
                return
            assert time.monotonic() < deadline, f"{prefix}: no event heard\n" + log_path.read_text()

    try:
        create_until_heard("before", subscribers["dashboard"])
        create_until_heard("before-admin", subscribers["admin"])
        heard(subscribers["dashboard"])

        _homepwner("keys", "revoke", "dashboard", "--file", str(allowed_file))
        # The service notices the edit within a second; the admin's subscription comes back by itself.
        deadline = time.monotonic() + 10
        while "allowed keys revoked" not in log_path.read_text():
            assert time.monotonic() < deadline, log_path.read_text()
            time.sleep(0.05)
        create_until_heard("resubscribed", subscribers["admin"])
        after = [f"after-{n}" for n in range(10)]
        for name in after:
            create(name)
        got = []
        deadline = time.monotonic() + 10
        while not set(after) <= set(got):
            assert time.monotonic() < deadline, f"the admin heard {got}"
            subscribers["admin"].poll(100, zmq.POLLIN)
            got += heard(subscribers["admin"])
        # The admin heard every one: the revoked key, had it been subscribed, would have too.
        leaked = [name for name in heard(subscribers["dashboard"]) if name.startswith(("after", "resubscribed"))]
        assert leaked == [], f"the revoked key heard {leaked}"
        assert process.poll() is None
    finally:
        process.terminate()
        process.wait(timeout=20)
        log.close()
        for socket in [admin, *subscribers.values()]:
            socket.close()
        context.term()


def test_an_allowed_keys_file_with_a_typo_leaves_the_service_degraded_until_fixed(pb, tmp_path):
    """A revocation saved with a typo does not apply; `homepwner health` says so, with the line."""
    keys = tmp_path / "keys"
    _homepwner("keys", "init", str(keys))
    allowed_file = keys / "allowed_keys"
    rpc = f"tcp://127.0.0.1:{free_port()}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOMEPWNER_")}
    log_path = tmp_path / "item.log"
    log = open(log_path, "wb")
    process = subprocess.Popen(
        [str(_executable("item-service")), "--rpc", rpc, "--events", f"tcp://127.0.0.1:{free_port()}",
         "--data-dir", str(tmp_path / "data"), "--image-service", f"tcp://127.0.0.1:{free_port()}",
         "--server-secret-key", str(keys / "server.key_secret"), "--allowed-keys", str(allowed_file)],
        stdout=log, stderr=subprocess.STDOUT, env=env)
    health = [str(_executable("homepwner")), "health", "item", "--item", rpc,
              "--client-secret-key", str(keys / "admin.key_secret"), "--server-key", str(keys / "server.key")]

    def check() -> subprocess.CompletedProcess:
        return subprocess.run(health, capture_output=True, text=True, timeout=30, env=env)

    try:
        deadline = time.monotonic() + 15
        while (result := check()).returncode != 0:
            assert time.monotonic() < deadline, result.stdout + result.stderr + log_path.read_text()
            time.sleep(0.2)
        assert "SERVING" in result.stdout and "DEGRADED" not in result.stdout
        original = allowed_file.read_text()
        allowed_file.write_text(original.replace("capture-worker ", "wroker ", 1))
        deadline = time.monotonic() + 10
        while "DEGRADED" not in (result := check()).stdout:
            assert time.monotonic() < deadline, result.stdout + log_path.read_text()
            time.sleep(0.1)
        assert result.returncode == 0
        assert f"item-service: allowed_keys: {allowed_file}:2: unknown role 'wroker'" in result.stdout, result.stdout
        allowed_file.write_text(original)
        deadline = time.monotonic() + 10
        while "DEGRADED" in (result := check()).stdout:
            assert time.monotonic() < deadline, result.stdout
            time.sleep(0.1)
        assert "SERVING" in result.stdout
    finally:
        process.terminate()
        process.wait(timeout=20)
        log.close()
