"""How the ``openai`` backend (moot.backends.openai_api) reaches its servers: an endpoint's record (its SDK
client, its server's own URLs and its place in the rotation), the SDK's HTTP client made to follow no redirect,
take no compressed reply and read none beyond a bound, and what a failed request says (a redirect's target, a
connection error's cause, the server's Retry-After)."""

from __future__ import annotations

import contextlib
import functools
import importlib
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import SplitResult, urljoin, urlunsplit

from moot.backends.openai_replies import _Failure, _ModelList, _short
from moot.backends.routing import Window
from moot.redact import redact


@dataclass(eq=False)
class _Endpoint:
    """One server of the backend: its client and its place in the rotation."""

    url: str  # credentials masked: what messages, the model id and the store show
    client: Any  # openai.AsyncOpenAI
    props_url: str  # where llama-server says how many slots it has
    tokenize_url: str  # where llama-server and vLLM tokenize a text
    version_url: str  # where vLLM says its version
    window: Window  # requests in flight at most: its cap, less while it answers 'overloaded'
    in_flight: int = 0
    failures: int = 0  # cool-downs since its last answer: the next one lasts twice as long
    down_until: float = 0.0  # time.monotonic() at which it returns to rotation
    epoch: int = 0  # cool-downs so far: an attempt sent before the latest neither extends nor ends it
    last_error: str = ""
    owners: frozenset[str] = frozenset()  # its model list's owned_by: which kind of server it is
    context: int | None = None  # its model list's max_model_len (vLLM's), tokens

    def load(self) -> float:
        return self.in_flight / self.window.limit

    def load_with_one_more(self) -> float:
        return (self.in_flight + 1) / self.window.limit


Send = Callable[[Any], Awaitable[Any]]  # one request, given the endpoint's SDK client


def _model_ids(listed: _ModelList, endpoint: _Endpoint) -> list[str]:
    """The ids of a model list, noting on ``endpoint`` who owns them (its kind of server)."""
    endpoint.owners = frozenset(str(m.owned_by).lower() for m in listed.data if m.owned_by is not None)
    endpoint.context = next((m.max_model_len for m in listed.data if _count(m.max_model_len)), None)
    return [m.id for m in listed.data]


def _count(value: Any) -> bool:
    """``value`` is a positive int (not a bool): a server's count of slots or tokens that can be taken."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _list_models(client: Any) -> Awaitable[Any]:
    return client.models.with_raw_response.list()


def _http_client(url: str, limit: int) -> Any:
    """The SDK's HTTP client for the endpoint at ``url``, but that it follows no redirect (``_send`` names
    it), asks for replies uncompressed and refuses a compressed one, and reads none beyond ``limit`` bytes:
    each refusal is a failed call, not retried."""
    import openai

    async def bound(response: Any) -> None:
        """Called with each reply's status and headers, before its body is read."""
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            raise _Failure(f"{url} sent a {encoding}-encoded reply, though moot asks for replies uncompressed", False)
        response.stream = _bounded_stream()(response.stream, limit, url)

    return openai.DefaultAsyncHttpxClient(
        follow_redirects=False, headers={"Accept-Encoding": "identity"}, event_hooks={"response": [bound]}
    )


def _http_library() -> Any:
    """The HTTP library the SDK is built on: httpx2 from openai 3 on, httpx before (alike in what moot uses)."""
    try:
        return importlib.import_module("httpx2")
    except ModuleNotFoundError:  # pragma: no cover - openai before 3
        return importlib.import_module("httpx")


@functools.cache
def _bounded_stream() -> type:
    """The body of a reply as read, failing once it passes a limit (made on first use: the HTTP library is
    loaded with the SDK, not with moot)."""

    class Bounded(_http_library().AsyncByteStream):  # type: ignore[misc]
        def __init__(self, stream: Any, limit: int, url: str):
            self._stream, self._limit, self._url = stream, limit, url

        async def __aiter__(self) -> AsyncIterator[bytes]:
            read = 0
            async with contextlib.aclosing(aiter(self._stream)) as chunks:
                async for chunk in chunks:
                    read += len(chunk)
                    if read > self._limit:
                        raise _Failure(_too_large(self._url, self._limit), retry=False)
                    yield chunk

        async def aclose(self) -> None:
            await self._stream.aclose()

        @property
        def elapsed(self) -> Any:  # what the response reports as its time, once read
            return getattr(self._stream, "elapsed", None)

    return Bounded


def _too_large(url: str, limit: int) -> str:
    """What a reply past the bound is refused with: the bound in its largest whole unit."""
    units = (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10), ("bytes", 1))
    unit, size = next((unit, size) for unit, size in units if limit % size == 0)
    return f"{url} sent a reply larger than {limit // size:,} {unit}"


def _redirected(url: str, response: Any) -> str:
    """What a redirect is refused with: where it points (resolved, credentials masked), if it says."""
    location = response.headers.get("location")
    target = ""
    if location:
        try:
            target = " to " + _short(redact(urljoin(str(response.url), location)))
        except ValueError:  # not a URL
            target = " to " + _short(redact(location))
    return (
        f"{url} answered HTTP {response.status_code} (a redirect{target}); "
        "moot does not follow redirects: give the final URL as base_url"
    )


def _connection_error(exc: BaseException) -> str:
    """The SDK's "Connection error." with what its HTTP library or the system said (the last exception of the
    chain that says something: "[Errno 111] Connect call failed", "Name or service not known", a TLS failure)."""
    said, cause = "", exc.__cause__ or exc.__context__
    for _ in range(10):  # a chain, not a cycle
        if cause is None:
            break
        said = str(cause) or said
        cause = cause.__cause__ or cause.__context__
    return f"{str(exc).rstrip('.')}: {_short(said)}" if said else str(exc)


def _root_url(parts: SplitResult, name: str) -> str:
    """A server's own endpoint beside the API (llama-server's ``/props``, its and vLLM's ``/tokenize``): at
    the base URL without its trailing /v1."""
    root = parts.path.rstrip("/").removesuffix("/v1")
    return urlunsplit(parts._replace(path=f"{root}/{name}", query="", fragment=""))


def _retry_after(headers: Any) -> float | None:
    """The server's wait in seconds (retry-after-ms, then retry-after), if it gives a positive one."""
    for header, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(header)
        if value is None:
            continue
        try:
            delay = float(value) / divisor
        except ValueError:
            continue
        return delay if math.isfinite(delay) and delay > 0 else None
    return None
