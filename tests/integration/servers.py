"""Constants and helpers for tests that talk to real servers on 127.0.0.1."""

import json
import socket

SERVER_KEY_ENV = "MOOT_TEST_SERVER_KEY"
SERVER_KEY = "test-key-not-a-secret"


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class FaultProxy:
    """A real HTTP proxy on 127.0.0.1 in front of a real server that injects failures.

    ``faults`` is consumed one entry per chat-completion request: "pass", an HTTP status
    such as 429 or 503 (answered by the proxy with a JSON error), "drop" (close the
    connection without answering) or "slow:<seconds>" (wait, then pass). When it is
    empty, requests pass. ``seen`` counts chat-completion requests.
    """

    def __init__(self, upstream: str, faults: list[str | int] | None = None):
        import http.server
        import threading
        import urllib.error
        import urllib.request

        self.upstream = upstream.rstrip("/")
        self.faults: list[str | int] = list(faults or [])
        self.seen = 0
        self.bodies: list[dict[str, object]] = []  # every chat-completion request, as sent
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                return None

            def _forward(self, body: bytes | None) -> None:
                request = urllib.request.Request(
                    proxy.upstream + self.path.removeprefix("/v1"),
                    data=body,
                    method=self.command,
                    headers={k: v for k, v in self.headers.items() if k.lower() in ("authorization", "content-type")},
                )
                try:
                    with urllib.request.urlopen(request, timeout=300) as response:
                        status, payload = response.status, response.read()
                except urllib.error.HTTPError as error:
                    status, payload = error.code, error.read()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self) -> None:
                self._forward(None)

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                fault: str | int = "pass"
                if self.path.endswith("/chat/completions"):
                    proxy.seen += 1
                    proxy.bodies.append(json.loads(body))
                    fault = proxy.faults.pop(0) if proxy.faults else "pass"
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
