"""Constants and helpers for tests that talk to real servers on 127.0.0.1."""

import socket

SERVER_KEY_ENV = "MOOT_TEST_SERVER_KEY"
SERVER_KEY = "test-key-not-a-secret"


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
