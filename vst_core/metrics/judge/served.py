"""The rubric judge through an OpenAI-compatible server (vLLM, SGLang, llama.cpp's server, ...).

A 7B-72B judge runs where it is served (tensor parallel, continuous batching, prefix caching); this
adapter sends each rubric prompt as one chat completion and reads the rating token's
log-probabilities from the answer, so the numbers follow G-Eval's rule exactly as the local
``transformers`` path (:class:`vst_core.metrics.judge.local.JudgeModel`) computes them.

One prompt is one request::

    {"model": NAME, "messages": [system, user, {"role": "assistant", "content": "Rating: "}],
     "max_tokens": 1, "temperature": 1.0, "logprobs": true, "top_logprobs": K,
     "add_generation_prompt": false, "continue_final_message": true}

The final assistant message is the rubric's answer prefix, continued (``continue_final_message``,
which vLLM, SGLang and TGI take; llama.cpp's server and OpenAI do not: use a template with an empty
answer prefix there), so the server's chat template renders the same text the local path builds
(its template with the generation prompt, then the prefix). The rating labels' entries of
``choices[0].logprobs.content[0].top_logprobs`` are the full-vocabulary log-probabilities
ℓ_1..ℓ_5 (a label outside the server's top K is stored as -1e30, i.e. p = 0; none of them there is
an error). Images go as ``data:`` URLs before the text, as the local vision path shows them.

Requests run in a bounded thread pool (``concurrency``) with a timeout each, and are retried with
exponential backoff on 429 and 5xx (a ``Retry-After`` in seconds instead, up to :data:`MAX_RETRY_AFTER`) and on
connection errors and timeouts. Redirects are never followed (the key would go to another host).
Every failure of one prompt is a reason string (:class:`~vst_core.metrics.judge.seam.JudgeAnswers`),
never a number, so nothing wrong is cached.

The API key is read from an environment variable named by the settings and only ever sent in the
``Authorization`` header; it is not kept anywhere else (settings, signature, records, messages).
"""

from __future__ import annotations

import base64
import json
import math
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from vst_core.metrics.judge.seam import JudgeAnswers
from vst_core.metrics.judge.template import JudgePrompt
from vst_core.models.hub import ModelLoadError, option

#: Servers whose OpenAI-compatible chat endpoint returns ``logprobs`` / ``top_logprobs``.
LOGPROB_SERVERS = "vLLM, SGLang, llama.cpp's server and OpenAI's own chat models"
#: Log-probabilities asked per answer (vLLM's default --max-logprobs is 20, OpenAI's maximum 20).
TOP_LOGPROBS = 20
#: Status codes retried with backoff.
RETRIED = frozenset({408, 429, 500, 502, 503, 504})
#: The longest ``Retry-After`` honoured, in seconds.
MAX_RETRY_AFTER = 30.0
#: The largest answer read (a one-token answer with 20 log-probabilities is a few kB).
MAX_RESPONSE_BYTES = 4 << 20
#: What a label outside the server's top K is stored as (p = 0, as the local path's impossible token).
ABSENT = -1e30
#: The lowest log-probability a token the server did send keeps: above :data:`ABSENT`, so a sent
#: token never weighs less than one it did not send (p = 0 either way, far below float precision).
PRESENT_FLOOR = -1e29
#: How far above 0 a returned log-probability may be (float rounding on the server).
LOGPROB_TOLERANCE = 1e-4
#: How far the answer tokens' probabilities may sum above 1.
MASS_TOLERANCE = 1e-3


class JudgeServerError(RuntimeError):
    """A judge server request that gave no usable answer; the message is the reason."""


def endpoint_host(url: str) -> str:
    """``host[:port]`` of an endpoint URL, the part the signature may name (no path, no credentials).

    >>> endpoint_host("http://user:secret@127.0.0.1:8000/v1")
    '127.0.0.1:8000'
    """
    parts = urlsplit(url)
    host = parts.hostname or ""
    return f"{host}:{parts.port}" if parts.port else host


def check_endpoint(url: str) -> str:
    """The endpoint's base URL (``http(s)://host[:port]/path``, no trailing slash), or ValueError.

    Credentials in the URL are refused (the key comes from an environment variable), as are query
    strings and fragments.

    >>> check_endpoint("http://127.0.0.1:8000/v1/")
    'http://127.0.0.1:8000/v1'
    """
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"judge endpoint must be an http(s) URL such as http://127.0.0.1:8000/v1, got {url!r}")
    if parts.username or parts.password:
        raise ValueError("judge endpoint: put no credentials in the URL; name the key's environment variable instead")
    if parts.query or parts.fragment:
        raise ValueError("judge endpoint: no query string or fragment (the base URL, e.g. http://HOST:PORT/v1)")
    return url.strip().rstrip("/")


def server_signature(served_model: str, revision: str | None = None) -> str:
    """The judge's identity for cache keys and records: ``served:NAME@REVISION`` (``unreported``
    when the server names no revision); the weights themselves cannot be digested from here.

    >>> server_signature("Qwen/Qwen2.5-VL-72B-Instruct")
    'served:Qwen/Qwen2.5-VL-72B-Instruct@unreported'
    """
    return f"served:{served_model}@{revision or 'unreported'}"


def image_data_url(path: Path) -> str:
    """A ``data:`` URL of an image file's bytes (PNG, JPEG, GIF or WebP as they are; anything else
    Pillow reads is sent as PNG)."""
    raw = path.read_bytes()
    kinds = ((b"\x89PNG", "png"), (b"\xff\xd8", "jpeg"), (b"GIF8", "gif"))
    kind = next((k for magic, k in kinds if raw.startswith(magic)), None)
    if kind is None and raw[:4] == b"RIFF" and raw[8:12] == b"WEBP":
        kind = "webp"
    if kind is None:
        import io

        from PIL import Image

        with Image.open(io.BytesIO(raw)) as im:
            buffer = io.BytesIO()
            im.convert("RGB").save(buffer, format="PNG")
        raw, kind = buffer.getvalue(), "png"
    return f"data:image/{kind};base64,{base64.b64encode(raw).decode('ascii')}"


def chat_messages(prompt: JudgePrompt, images: Sequence[str] = ()) -> list[dict[str, Any]]:
    """System and user turns (the images' data URLs before the text), then the answer prefix as an
    assistant turn to continue when there is one."""
    user: Any = prompt.user
    if images:
        user = [{"type": "image_url", "image_url": {"url": url}} for url in images] + [{"type": "text", "text": prompt.user}]
    messages: list[dict[str, Any]] = [{"role": "user", "content": user}]
    if prompt.system:
        messages.insert(0, {"role": "system", "content": prompt.system})
    if prompt.prefix:
        messages.append({"role": "assistant", "content": prompt.prefix})
    return messages


def rating_body(model: str, prompt: JudgePrompt, images: Sequence[str] = (), top_logprobs: int = TOP_LOGPROBS) -> dict[str, Any]:
    """The chat-completion request of one rubric prompt: one token, its top log-probabilities."""
    body: dict[str, Any] = {
        "model": model,
        "messages": chat_messages(prompt, images),
        "max_tokens": 1,
        "temperature": 1.0,
        "logprobs": True,
        "top_logprobs": top_logprobs,
    }
    if prompt.prefix:
        body.update(add_generation_prompt=False, continue_final_message=True)
    return body


def _number(value: Any) -> float | None:
    """A finite JSON number as a float, else None (an integer too large for a float included).

    >>> _number(-0.5), _number(10**400), _number("1"), _number(float("nan"))
    (-0.5, None, None, None)
    """
    if type(value) not in (int, float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def label_logprobs(payload: Any, labels: Sequence[str]) -> list[float]:
    """The log-probabilities of ``labels`` in a chat completion's first generated position.

    Reads ``choices[0].logprobs.content[0]``: its token and its ``top_logprobs``; a label matches a
    token string exactly (as the local path takes exactly the label's token id). Raises
    :class:`JudgeServerError` with the reason for anything that is not such an answer.

    >>> answer = {"choices": [{"logprobs": {"content": [{"token": "4", "logprob": -0.2,
    ...     "top_logprobs": [{"token": "4", "logprob": -0.2}, {"token": "3", "logprob": -2.0}]}]}}]}
    >>> label_logprobs(answer, ["1", "2", "3", "4", "5"])
    [-1e+30, -1e+30, -2.0, -0.2, -1e+30]

    A token listed twice must have one log-probability; a token sent with less than
    :data:`PRESENT_FLOOR` keeps that floor (it was sent, so it outweighs an absent label).
    """
    choices = payload.get("choices") if isinstance(payload, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise JudgeServerError("the server's answer has no choices (not a chat completion)")
    logprobs = choices[0].get("logprobs")
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not isinstance(content, list) or not content or not isinstance(content[0], dict):
        raise JudgeServerError(
            "the server's answer has no log-probabilities (choices[0].logprobs.content is missing); the judge reads "
            f"the rating token's probabilities, which {LOGPROB_SERVERS} return for `logprobs: true, top_logprobs: K` "
            "(vLLM caps K at its --max-logprobs, default 20)"
        )
    first = content[0]
    entries = [first, *(first.get("top_logprobs") or [])] if isinstance(first.get("top_logprobs"), list | None) else None
    if entries is None:
        raise JudgeServerError("the server's top_logprobs is not a list")
    found: dict[str, float] = {}
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("token"), str):
            raise JudgeServerError("a top_logprobs entry of the server's answer has no token string")
        value = _number(entry.get("logprob"))
        if value is None or value > LOGPROB_TOLERANCE:
            raise JudgeServerError(f"the server gave token {entry['token']!r} the log-probability {entry.get('logprob')!r}")
        value = max(min(value, 0.0), PRESENT_FLOOR)
        seen = found.setdefault(entry["token"], value)
        if abs(seen - value) > LOGPROB_TOLERANCE * max(1.0, abs(value)):
            raise JudgeServerError(
                f"the server listed token {_short_text(entry['token'], 20)!r} twice, with log-probabilities {seen!r} and {value!r}"
            )
    if not any(label in found for label in labels):
        shown = ", ".join(repr(t) for t in list(found)[:8])
        raise JudgeServerError(
            f"none of the answer tokens {', '.join(repr(label) for label in labels)} is among the server's "
            f"{len(found)} most likely tokens ({shown}); the served model does not answer the rubric with a digit"
        )
    values = [found.get(label, ABSENT) for label in labels]
    if sum(math.exp(v) for v in values) > 1.0 + MASS_TOLERANCE:
        raise JudgeServerError("the server's log-probabilities of the answer tokens sum above probability 1")
    return values


def answering_model(payload: Any, asked: str) -> str | None:
    """Why an answer is not from the model ``asked`` (the answer's ``model``), or None when it is:
    the same name, or a dated snapshot of it (``gpt-4o`` answered by ``gpt-4o-2024-08-06``). An
    answer that names no model is taken as the asked one's.

    >>> answering_model({"model": "gpt-4o-2024-08-06"}, "gpt-4o"), answering_model({}, "judge")
    (None, None)
    >>> answering_model({"model": "other"}, "judge")
    "the answer came from model 'other', not the 'judge' asked for"
    """
    named = payload.get("model") if isinstance(payload, dict) else None
    if not isinstance(named, str) or not named or named == asked:
        return None
    if named.startswith(asked + "-") and named[len(asked) + 1 :][:1].isdigit():
        return None
    return f"the answer came from model {_short_text(named, 60)!r}, not the {_short_text(asked, 60)!r} asked for"


def answer_text(payload: Any) -> str:
    """``choices[0].message.content`` of a chat completion (a generated rationale)."""
    choices = payload.get("choices") if isinstance(payload, dict) else None
    message = choices[0].get("message") if isinstance(choices, list) and choices and isinstance(choices[0], dict) else None
    text = message.get("content") if isinstance(message, dict) else None
    if not isinstance(text, str):
        raise JudgeServerError("the server's answer has no message text")
    return text.strip()


def api_key(variable: str | None) -> str | None:
    """The key in environment variable ``variable`` (None when no variable is named); a named
    variable that is unset or empty raises :class:`ModelLoadError` naming the variable, never a value."""
    if not variable:
        return None
    value = os.environ.get(variable, "")
    if not value.strip():
        raise ModelLoadError(f"judge server: the environment variable {variable} ({option('judge_api_key_env')}) is not set")
    return value.strip()


#: The deadline of the request the calling thread is making (monotonic seconds), read by the
#: connections of :func:`deadline_transport`.
_DEADLINE = threading.local()


def _within_deadline(timeout: float | None) -> float | None:
    """A socket operation's timeout cut to what is left of this thread's request deadline."""
    at = getattr(_DEADLINE, "at", None)
    if at is None:
        return timeout
    import httpcore

    left = at - time.monotonic()
    if left <= 0:
        raise httpcore.ReadTimeout("the request did not end within its timeout")
    return left if timeout is None else min(timeout, left)


def deadline_transport(limits: Any) -> Any:
    """httpx's own transport whose every socket read, write and connect is cut to the calling
    thread's request deadline, so a server dripping its status line, headers or body one byte at a
    time (never a read timeout) is cut off when the request has taken its seconds."""
    import httpcore
    import httpx

    class Stream(httpcore.NetworkStream):
        def __init__(self, inner: Any) -> None:
            self._inner = inner

        def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
            return bytes(self._inner.read(max_bytes, _within_deadline(timeout)))

        def write(self, buffer: bytes, timeout: float | None = None) -> None:
            self._inner.write(buffer, _within_deadline(timeout))

        def close(self) -> None:
            self._inner.close()

        def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None) -> Any:
            return Stream(self._inner.start_tls(ssl_context, server_hostname, _within_deadline(timeout)))

        def get_extra_info(self, info: str) -> Any:
            return self._inner.get_extra_info(info)

    class Backend(httpcore.NetworkBackend):
        def __init__(self) -> None:
            self._inner = httpcore.SyncBackend()

        def connect_tcp(
            self,
            host: str,
            port: int,
            timeout: float | None = None,
            local_address: str | None = None,
            socket_options: Any = None,
        ) -> Any:
            return Stream(self._inner.connect_tcp(host, port, _within_deadline(timeout), local_address, socket_options))

        def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options: Any = None) -> Any:
            return Stream(self._inner.connect_unix_socket(path, _within_deadline(timeout), socket_options))

        def sleep(self, seconds: float) -> None:
            self._inner.sleep(seconds)

    transport = httpx.HTTPTransport(limits=limits, trust_env=False)
    # httpx takes no network backend: its pool is built again as httpx builds it, with ours
    transport._pool = httpcore.ConnectionPool(
        ssl_context=transport._pool._ssl_context,
        max_connections=limits.max_connections,
        max_keepalive_connections=limits.max_keepalive_connections,
        keepalive_expiry=limits.keepalive_expiry,
        network_backend=Backend(),
    )
    return transport


class JudgeServer:
    """A judge served behind an OpenAI-compatible endpoint, with :class:`JudgeModel`'s interface.

    ``calls`` counts chat requests that got an HTTP answer (retries included; not the one
    ``/models`` look-up of :meth:`connect`); ``signature`` is
    :func:`server_signature` of the served model and the revision ``/models`` reports, set by
    :meth:`connect`. ``transport`` is httpx's (tests pass none: they serve on 127.0.0.1)."""

    def __init__(
        self,
        endpoint: str,
        served_model: str,
        *,
        key: str | None = None,
        vision: bool = False,
        concurrency: int = 8,
        timeout: float = 60.0,
        retries: int = 3,
        backoff: float = 0.5,
        top_logprobs: int = TOP_LOGPROBS,
        transport: Any = None,
    ) -> None:
        import httpx

        self.endpoint = check_endpoint(endpoint)
        self.name = served_model
        self.host = endpoint_host(self.endpoint)
        self.concurrency = max(1, concurrency)
        self.retries = max(0, retries)
        self.backoff = max(0.0, backoff)
        self.top_logprobs = max(1, top_logprobs)
        self.revision: str | None = None
        self.timeout = timeout  # seconds a whole request may take, its answer read to the end
        self.signature = server_signature(served_model)
        self.calls = 0
        self.failures = 0  # prompts that got no usable answer
        self._vision = vision
        self._lock = threading.Lock()
        if key and any(ord(c) < 32 or ord(c) == 127 for c in key):
            # httpx would refuse the header and print it, key and all
            raise ModelLoadError("the judge's API key holds a control character (a line break?): check its variable")
        self._key = key or ""
        # answers are read as sent: a compressed one could inflate far beyond MAX_RESPONSE_BYTES
        headers = {"Accept-Encoding": "identity", **({"Authorization": f"Bearer {key}"} if key else {})}
        limits = httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency)
        self._client = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(timeout),
            follow_redirects=False,
            transport=transport if transport is not None else deadline_transport(limits),
            limits=limits,
            trust_env=False,
        )

    def __repr__(self) -> str:
        return f"JudgeServer({self.name!r} at {self.host})"

    @property
    def vision(self) -> bool:
        return self._vision

    def close(self) -> None:
        self._client.close()

    def connect(self) -> JudgeServer:
        """Ask ``/models`` for the served model (and its revision, when reported); a server that
        cannot be reached or does not serve it raises :class:`ModelLoadError`."""
        try:
            payload = self._request("GET", "/models", None, retries=0)
        except JudgeServerError as exc:
            raise ModelLoadError(f"judge server {self.host}: {exc}") from None
        data = payload.get("data") if isinstance(payload, dict) else None
        entries = [d for d in data if isinstance(d, dict)] if isinstance(data, list) else []
        served = [str(d.get("id")) for d in entries]
        entry = next((d for d in entries if d.get("id") == self.name), None)
        if entry is None:
            listed = ", ".join(repr(s) for s in served[:10]) or "none"
            raise ModelLoadError(
                f"judge server {self.host} does not serve {self.name!r} (it serves {listed}); see {option('judge_served_model')}"
            )
        revision = _short_text(entry.get("revision"))
        root = _short_text(entry.get("root"))
        parts = [str(revision)] if isinstance(revision, str) and revision else []
        if isinstance(root, str) and root and root != self.name:
            parts.append(f"root={root}")
        self.revision = ",".join(parts) or None
        self.signature = server_signature(self.name, self.revision)
        return self

    def redact(self, text: str) -> str:
        """``text`` with the API key (as sent, and as JSON escapes it) replaced by ``[key]``: every
        message that may carry a server's words goes through here (a gateway may echo the key).

        >>> JudgeServer("http://127.0.0.1:9/v1", "m", key="sk-1").redact("bad key Bearer sk-1")
        'bad key Bearer [key]'
        """
        key = self._key
        if not key:
            return text
        for form in {key, json.dumps(key)[1:-1]}:
            text = text.replace(form, "[key]")
        head = key[:8]
        if len(key) >= 12 and head in text:  # the start of the key (a gateway showing part of it)
            parts, at = [], 0
            while (found := text.find(head, at)) >= 0:
                n = len(head)
                while found + n < len(text) and n < len(key) and text[found + n] == key[n]:
                    n += 1
                parts.append(text[at:found] + "[key]")
                at = found + n
            text = "".join(parts) + text[at:]
        return text

    def _request(self, method: str, path: str, body: dict[str, Any] | None, retries: int | None = None) -> Any:
        """One request with retries; the parsed JSON answer, or :class:`JudgeServerError` (its
        message redacted: :meth:`redact`)."""
        try:
            return self._request_once(method, path, body, retries)
        except JudgeServerError as exc:
            raise JudgeServerError(self.redact(str(exc))) from None

    def _request_once(self, method: str, path: str, body: dict[str, Any] | None, retries: int | None) -> Any:
        import httpx

        url = self.endpoint + path
        why = ""
        retries = self.retries if retries is None else retries
        for attempt in range(retries + 1):
            wait = self.backoff * (2**attempt)
            deadline = time.monotonic() + self.timeout  # the whole request: a server dripping bytes is cut off too
            _DEADLINE.at = deadline  # the connection's reads and writes stop there (deadline_transport)
            try:
                with self._client.stream(method, url, json=body) as response:
                    if method == "POST":
                        with self._lock:
                            self.calls += 1
                    status = response.status_code
                    if 300 <= status < 400:
                        target = endpoint_host(response.headers.get("location", "")) or "elsewhere"
                        raise JudgeServerError(f"the server redirected (HTTP {status}) to {target}; redirects are not followed")
                    encoding = response.headers.get("content-encoding", "identity").strip().lower()
                    if encoding not in ("", "identity"):
                        raise JudgeServerError(f"the server compressed its answer ({encoding[:40]}) although asked not to")
                    raw = bytearray()
                    for chunk in response.iter_raw():
                        raw += chunk
                        if time.monotonic() > deadline:
                            raise httpx.ReadTimeout("the answer did not end within the timeout")
                        if len(raw) > MAX_RESPONSE_BYTES:
                            raise JudgeServerError(f"the server's answer is larger than {MAX_RESPONSE_BYTES} bytes")
                    if status in RETRIED:
                        why = f"HTTP {status}{_detail(bytes(raw), self.redact)}"
                        after = response.headers.get("retry-after")
                        wait = wait if after is None else _retry_after(after)
                    elif status >= 400:
                        raise JudgeServerError(f"HTTP {status}{_detail(bytes(raw), self.redact)}")
                    else:
                        try:
                            return json.loads(bytes(raw))
                        except (ValueError, RecursionError):
                            raise JudgeServerError(
                                f"the server's answer is not JSON ({len(raw)} bytes: {bytes(raw[:60])!r})"
                            ) from None
            except httpx.TimeoutException:
                why = f"no whole answer within {self.timeout:g}s (timeout)"
            except httpx.TransportError as exc:
                why = f"cannot reach the server ({type(exc).__name__}: {exc})"
            except httpx.HTTPError as exc:  # an answer httpx cannot decode: not retried
                raise JudgeServerError(f"unreadable answer ({type(exc).__name__}: {exc})") from None
            finally:
                _DEADLINE.at = None
            if attempt < retries:
                time.sleep(wait)
        tries = f" after {retries + 1} tries" if retries else ""
        raise JudgeServerError(f"{why}{tries}")

    def _images(self, prompt: JudgePrompt, root: Path | None, images: bool) -> list[str]:
        if not (images and self.vision and prompt.images):
            return []
        return [image_data_url((root or Path(".")) / ref) for ref in prompt.images]

    def _one(self, prompt: JudgePrompt, labels: Sequence[str], root: Path | None, images: bool) -> list[float] | str:
        try:
            body = rating_body(self.name, prompt, self._images(prompt, root, images), self.top_logprobs)
            payload = self._request("POST", "/chat/completions", body)
            other = answering_model(payload, self.name)
            if other is not None:
                raise JudgeServerError(other)
            return label_logprobs(payload, labels)
        except JudgeServerError as exc:
            return self.redact(str(exc))
        except OSError as exc:  # an image that cannot be read
            return f"cannot send the story's image: {exc.strerror or exc}"

    def answers(
        self, prompts: Sequence[JudgePrompt], labels: Sequence[str], *, root: Path | None = None, images: bool = False
    ) -> JudgeAnswers:
        """Each prompt's label log-probabilities, or the reason it has none (requests in parallel)."""
        if not prompts:
            return JudgeAnswers(np.zeros((0, len(labels))), ())
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(prompts))) as pool:
            found = list(pool.map(lambda p: self._one(p, labels, root, images), prompts))
        values = np.full((len(prompts), len(labels)), np.nan, dtype=np.float64)
        errors: list[str | None] = []
        for i, answer in enumerate(found):
            if isinstance(answer, str):
                errors.append(f"judge server {self.host}: {answer}")
            else:
                values[i] = answer
                errors.append(None)
        with self._lock:
            self.failures += sum(e is not None for e in errors)
        return JudgeAnswers(values, tuple(errors))

    def logprobs(
        self, prompts: Sequence[JudgePrompt], labels: Sequence[str], *, root: Path | None = None, images: bool = False
    ) -> np.ndarray:
        """As :meth:`JudgeModel.logprobs`; the first failed prompt raises :class:`JudgeServerError`."""
        found = self.answers(prompts, labels, root=root, images=images)
        failed = next((e for e in found.errors if e is not None), None)
        if failed is not None:
            raise JudgeServerError(failed)
        return found.logprobs

    def generate(
        self, prompts: Sequence[JudgePrompt], *, root: Path | None = None, images: bool = False, max_new_tokens: int = 80
    ) -> list[str]:
        """Greedy continuations (temperature 0): the rationale shown beside the scores; a failed
        request raises :class:`JudgeServerError` (a rationale is never cached from one)."""

        def one(prompt: JudgePrompt) -> str:
            body = {
                "model": self.name,
                "messages": chat_messages(prompt, self._images(prompt, root, images)),
                "max_tokens": max_new_tokens,
                "temperature": 0.0,
            }
            return answer_text(self._request("POST", "/chat/completions", body))

        with ThreadPoolExecutor(max_workers=max(1, min(self.concurrency, len(prompts)))) as pool:
            return list(pool.map(one, prompts))


def _short_text(value: Any, limit: int = 200) -> str | None:
    """A revision or a root the server reports, as printable text of at most ``limit`` characters
    (a lone surrogate or a control character dropped), or None.

    >>> _short_text("abc" + chr(0xD800) + chr(10) + "x" * 300)[:6], len(_short_text("x" * 300))
    ('abcxxx', 200)
    """
    if not isinstance(value, str):
        return None
    text = "".join(c for c in value if c.isprintable() and not 0xD800 <= ord(c) <= 0xDFFF)
    return text[:limit] or None


def _detail(raw: bytes, redact: Callable[[str], str] = lambda text: text) -> str:
    """A short, printable excerpt of an error body (``: ...``), or ''; ``redact`` runs over the whole
    body before it is cut, so no part of a key survives the cut."""
    text = redact(raw.decode("utf-8", "replace"))[:200].strip()
    text = "".join(c if c.isprintable() else " " for c in text)
    return f": {text}" if text else ""


def _retry_after(value: str | None) -> float:
    try:
        seconds = float(value) if value is not None else 0.0
    except ValueError:
        return 0.0
    return min(max(seconds, 0.0), MAX_RETRY_AFTER) if math.isfinite(seconds) else 0.0


def load_judge_server(
    endpoint: str,
    served_model: str,
    *,
    api_key_env: str | None = None,
    vision: bool = False,
    concurrency: int = 8,
    timeout: float = 60.0,
    top_logprobs: int = TOP_LOGPROBS,
) -> JudgeServer:
    """A connected :class:`JudgeServer` (its key from ``api_key_env``); an unreachable server, a
    model it does not serve or an unset key variable raise :class:`ModelLoadError`."""
    try:
        server = JudgeServer(
            endpoint,
            served_model,
            key=api_key(api_key_env),
            vision=vision,
            concurrency=concurrency,
            timeout=timeout,
            top_logprobs=top_logprobs,
        )
    except ValueError as exc:
        raise ModelLoadError(str(exc)) from None
    try:
        return server.connect()
    except ModelLoadError:
        server.close()
        raise


__all__ = [
    "LOGPROB_SERVERS",
    "TOP_LOGPROBS",
    "JudgeServer",
    "JudgeServerError",
    "api_key",
    "chat_messages",
    "check_endpoint",
    "endpoint_host",
    "image_data_url",
    "label_logprobs",
    "load_judge_server",
    "rating_body",
    "server_signature",
]
