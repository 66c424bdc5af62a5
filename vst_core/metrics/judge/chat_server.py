"""A small OpenAI-compatible chat server on 127.0.0.1, for measuring and testing the judge's client.

:class:`ChatServer` serves ``GET /v1/models`` and hands each ``POST /v1/chat/completions`` body to
an ``answer`` function that returns a :class:`Reply` (status, body, headers, and a delay before
answering). :func:`fixed_latency_answer` is the benchmark's: every request waits a fixed time
and gets deterministic log-probabilities of the rating tokens, so the client's overhead and its
concurrency are what is measured (a real server's time per request is its own). The tests serve a
tiny local model's real log-probabilities through the same class, and hostile answers.

Only ever bound to 127.0.0.1 (a port the system picks)."""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from vst_core.hashing import json_digest


@dataclass(frozen=True)
class Reply:
    """One HTTP answer: status, body bytes, extra headers, seconds to wait before sending it."""

    status: int = 200
    body: bytes = b""
    headers: tuple[tuple[str, str], ...] = ()
    delay: float = 0.0


Answer = Callable[[dict[str, Any]], Reply]


def completion(top: Sequence[tuple[str, float]], model: str = "judge") -> Reply:
    """A chat completion whose one generated token is ``top[0]``, with ``top`` as its top log-probabilities.

    >>> json.loads(completion([("3", -0.5)]).body)["choices"][0]["logprobs"]["content"][0]["token"]
    '3'
    """
    entries = [{"token": t, "logprob": v, "bytes": list(t.encode("utf-8"))} for t, v in top]
    first = {**entries[0], "top_logprobs": entries}
    body = {
        "id": "chatcmpl-local",
        "object": "chat.completion",
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": top[0][0]},
                "logprobs": {"content": [first]},
                "finish_reason": "length",
            }
        ],
        "usage": {"prompt_tokens": 0, "completion_tokens": 1, "total_tokens": 1},
    }
    return Reply(200, json.dumps(body).encode("utf-8"), (("content-type", "application/json"),))


def synthetic_logprobs(request: dict[str, Any], labels: Sequence[str] = ("1", "2", "3", "4", "5")) -> list[tuple[str, float]]:
    """Deterministic log-probabilities of ``labels`` (and one other token) for a request: a
    function of its messages, 90% of the mass on the labels, sorted most likely first."""
    digest = json_digest(request.get("messages"))
    weights = [1.0 + int(digest[2 * i : 2 * i + 2], 16) / 32.0 for i in range(len(labels))]
    total = sum(weights)
    top = [(label, math.log(0.9 * w / total)) for label, w in zip(labels, weights, strict=True)] + [(".", math.log(0.1))]
    return sorted(top, key=lambda kv: -kv[1])


def fixed_latency_answer(latency: float) -> Answer:
    """The benchmark's server: ``latency`` seconds a request, then :func:`synthetic_logprobs`."""

    def answer(request: dict[str, Any]) -> Reply:
        found = completion(synthetic_logprobs(request), str(request.get("model", "judge")))
        return Reply(found.status, found.body, found.headers, latency)

    return answer


class ChatServer:
    """``with ChatServer(answer, models=("judge",)) as server:`` serves on ``server.url``
    (``http://127.0.0.1:PORT/v1``); ``server.requests`` lists the chat request bodies received, ``server.authorizations`` the
    ``Authorization`` header of every request."""

    def __init__(self, answer: Answer, models: Sequence[str] = ("judge",), *, revision: str | None = None) -> None:
        self.answer = answer
        self.models = tuple(models)
        self.revision = revision
        self.requests: list[dict[str, Any]] = []
        self.model_requests = 0
        self.authorizations: list[str | None] = []  # the Authorization header of each request
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._server is not None, "the server is not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def _models(self) -> Reply:
        data = [
            {"id": m, "object": "model", "owned_by": "local", **({"revision": self.revision} if self.revision else {})}
            for m in self.models
        ]
        return Reply(200, json.dumps({"object": "list", "data": data}).encode("utf-8"), (("content-type", "application/json"),))

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out at once, not 40 ms apart
            wbufsize = -1  # buffered: one write per answer, flushed after each request

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _send(self, reply: Reply) -> None:
                if reply.delay:
                    time.sleep(reply.delay)
                try:
                    self.send_response(reply.status)
                    for name, value in reply.headers:
                        self.send_header(name, value)
                    self.send_header("content-length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (its timeout)
                    self.close_connection = True

            def do_GET(self) -> None:
                with owner._lock:
                    owner.authorizations.append(self.headers.get("authorization"))
                if self.path.rstrip("/").endswith("/v1/models"):
                    with owner._lock:
                        owner.model_requests += 1
                    self._send(owner._models())
                else:
                    self._send(Reply(404, b'{"error": "not found"}'))

            def do_POST(self) -> None:
                with owner._lock:
                    owner.authorizations.append(self.headers.get("authorization"))
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                if not self.path.rstrip("/").endswith("/v1/chat/completions"):
                    self._send(Reply(404, b'{"error": "not found"}'))
                    return
                try:
                    body = json.loads(raw)
                except ValueError:
                    self._send(Reply(400, b'{"error": "not JSON"}'))
                    return
                with owner._lock:
                    owner.requests.append(body)
                self._send(owner.answer(body))

        return Handler

    def __enter__(self) -> ChatServer:
        server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)


__all__ = ["Answer", "ChatServer", "Reply", "completion", "fixed_latency_answer", "synthetic_logprobs"]
