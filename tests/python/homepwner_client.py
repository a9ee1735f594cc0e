"""A small Homepwner RPC client, written from docs/protocol.md alone.

Frames (docs/protocol.md, "Frames"):
  DEALER sends [b"", RequestHeader, request] and receives [b"", ResponseHeader, response];
  REQ sends [RequestHeader, request] and receives [ResponseHeader, response] (REQ adds and
  strips the empty delimiter itself).
Replies are matched to requests by ResponseHeader.request_id; request ids start at 1 because
the server answers 0 when it could not read the request header.
"""

from __future__ import annotations

import importlib
import itertools
import subprocess
import sys
import time
import types
from dataclasses import dataclass
from pathlib import Path

import zmq

PROTO_MODULES = ("rpc", "health", "items", "images", "capture", "jobs", "events", "metrics")


def compile_protos(proto_root: Path, out_dir: Path) -> types.SimpleNamespace:
    """Runs grpc_tools.protoc over proto/homepwner/v1/*.proto and imports the *_pb2 modules."""
    protos = sorted(str(p) for p in (proto_root / "homepwner" / "v1").glob("*.proto"))
    if not protos:
        raise FileNotFoundError(f"no .proto files under {proto_root}/homepwner/v1")
    out_dir.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", f"-I{proto_root}", f"--python_out={out_dir}", *protos],
        check=True,
    )
    if str(out_dir) not in sys.path:
        sys.path.insert(0, str(out_dir))
    return types.SimpleNamespace(
        **{name: importlib.import_module(f"homepwner.v1.{name}_pb2") for name in PROTO_MODULES}
    )


class RpcError(Exception):
    """A reply whose ResponseHeader.code is not OK."""

    def __init__(self, header) -> None:
        super().__init__(f"code {header.code}: {header.message}")
        self.header = header
        self.code = header.code
        self.message = header.message
        self.retry_after_ms = header.retry_after_ms


class NotSent(Exception):
    """The request never left this process (no connected server): always safe to retry."""


@dataclass
class Reply:
    header: object  # rpc_pb2.ResponseHeader
    body: bytes


class Client:
    """One DEALER (many calls in flight) or REQ (one call at a time) socket to one server."""

    def __init__(self, endpoint: str, pb: types.SimpleNamespace, *, socket_type: int = zmq.DEALER,
                 context: zmq.Context | None = None) -> None:
        self.pb = pb
        self.socket_type = socket_type
        self.socket = (context or zmq.Context.instance()).socket(socket_type)
        self.socket.setsockopt(zmq.LINGER, 0)
        # Nothing is queued for a server that is not connected: a send then fails at once.
        self.socket.setsockopt(zmq.IMMEDIATE, 1)
        self.socket.connect(endpoint)
        self._ids = itertools.count(1)
        self._early: dict[int, Reply] = {}

    def close(self) -> None:
        self.socket.close(linger=0)

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def next_request_id(self) -> int:
        return next(self._ids)

    # -- frames -----------------------------------------------------------------------------

    def send_frames(self, frames: list[bytes], send_timeout_ms: int = 2000) -> None:
        """Sends raw frames as given (for tests of malformed input)."""
        self.socket.setsockopt(zmq.SNDTIMEO, send_timeout_ms)
        try:
            self.socket.send_multipart(frames)
        except zmq.Again as error:
            raise NotSent("no connection to the server; the request was not sent") from error

    def receive_frames(self, timeout_ms: int) -> list[bytes]:
        if not self.socket.poll(max(1, timeout_ms), zmq.POLLIN):
            raise TimeoutError(f"no reply within {timeout_ms} ms")
        return self.socket.recv_multipart()

    # -- requests and replies ---------------------------------------------------------------

    def send(self, method: str, request=b"", *, request_id: int | None = None, timeout_ms: int = 0,
             idempotency_key: str = "", metadata: dict[str, str] | None = None) -> int:
        """Sends one request; returns its request_id. `request` is a message or encoded bytes."""
        rpc = self.pb.rpc
        header = rpc.RequestHeader(
            method=method,
            request_id=self.next_request_id() if request_id is None else request_id,
            timeout_ms=timeout_ms,
            idempotency_key=idempotency_key,
            metadata=[rpc.MetadataEntry(key=k, value=v) for k, v in sorted((metadata or {}).items())],
        )
        body = request if isinstance(request, bytes) else request.SerializeToString()
        frames = [header.SerializeToString(), body]
        if self.socket_type == zmq.DEALER:
            frames.insert(0, b"")  # the empty delimiter; REQ adds it by itself
        self.send_frames(frames)
        return header.request_id

    def receive(self, timeout_ms: int) -> Reply:
        """The next reply, whatever its request_id."""
        frames = self.receive_frames(timeout_ms)
        if self.socket_type == zmq.DEALER:
            if len(frames) != 3 or frames[0] != b"":
                raise ValueError(f"reply is not [empty, header, body]: {len(frames)} frames")
            frames = frames[1:]
        if len(frames) != 2:
            raise ValueError(f"reply is not [header, body]: {len(frames)} frames")
        return Reply(self.pb.rpc.ResponseHeader.FromString(frames[0]), frames[1])

    def receive_for(self, request_id: int, timeout_ms: int) -> Reply:
        """The reply to `request_id`; replies to other ids that arrive meanwhile are kept."""
        if request_id in self._early:
            return self._early.pop(request_id)
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            remaining = int((deadline - time.monotonic()) * 1000)
            if remaining <= 0:
                raise TimeoutError(f"no reply to request {request_id} within {timeout_ms} ms")
            reply = self.receive(remaining)
            if reply.header.request_id == request_id:
                return reply
            self._early[reply.header.request_id] = reply

    def call_raw(self, method: str, request=b"", *, timeout_ms: int = 5000, **kwargs) -> Reply:
        request_id = self.send(method, request, timeout_ms=timeout_ms, **kwargs)
        # Wait a little longer than the server's budget: its DEADLINE_EXCEEDED reply is the answer.
        return self.receive_for(request_id, timeout_ms + 1000)

    def call(self, method: str, request, response_type, *, timeout_ms: int = 5000, **kwargs):
        """One call; returns the decoded response or raises RpcError."""
        reply = self.call_raw(method, request, timeout_ms=timeout_ms, **kwargs)
        if reply.header.code != self.pb.rpc.OK:
            raise RpcError(reply.header)
        return response_type.FromString(reply.body)

    def health_check(self, service: str = "", timeout_ms: int = 5000):
        health = self.pb.health
        return self.call("/homepwner.v1.Health/Check", health.HealthCheckRequest(service=service),
                         health.HealthCheckResponse, timeout_ms=timeout_ms)
