"""The ``openai`` backend: any OpenAI-compatible server through the official SDK, or several serving one model.

Works with OpenAI, vLLM, llama.cpp's llama-server and Ollama. Each sample is its own request (n=1) with
its own seed, sent concurrently: every sample then has exact token counts and latency, servers that
ignore ``n`` behave like those that honour it, and the samples equal those of the ``local`` backend's
seed convention. The API key is read from an environment variable at construction and kept only inside
the SDK clients; it is never stored or logged (moot.redact masks it, and a base URL's credentials, in
every message).

The SDK is the transport; the reply is read and validated here. A reply that is not a chat
completion (a truncated or non-UTF-8 body, an HTML page, a field of the wrong type, a null message
content, JSON nested too deeply to read, a token count below 0 or from 2**53 up, a log-probability
that is not finite or is above 0, fewer log-probabilities than generated tokens) is a failed call, as a
5xx is: it is retried, and after ``max_retries`` retries it is a BackendError naming what was wrong,
which ends its question with status ``error`` and lets the run go on. Retries (of connection errors,
timeouts, 408, 409, 429, 5xx and malformed replies, never of other client errors) back off as the
SDK's own do: 0.5 s doubling up to 8 s, less up to 25 % jitter, or the server's Retry-After when it
asks for at most a minute. A lone surrogate (JSON's ``"\\ud800"``, which no store or terminal can write)
in any text of a reply, or of an error message, is read as U+FFFD, so that the reply is kept, readable.

No server can hold a run or fill its memory. ``timeout_s`` bounds each attempt as a whole, from sending
the request to the last byte of the reply (a server that trickles a byte at a time does not hold it
open): an attempt past it is a timeout, retried. No reply is read beyond ``max_reply_bytes`` (8 MiB):
the read stops there and the call fails, not retried. moot asks for replies uncompressed, and refuses a
compressed one (it could unpack to far more than the bound). Nor does it follow a redirect: a 3xx is a
failed call, not retried, that names where the server points (the store would otherwise record an
endpoint that did not answer).

Endpoints. ``base_url`` may list several endpoints serving the same model (replicas). Each request goes
to the endpoint with the least outstanding work: the fewest requests in flight relative to its limit,
ties to the first listed; with ``routing = "affinity"`` (the default) a request that continues a
conversation an endpoint answered goes back there unless it is ``affinity_factor`` times busier
(moot.backends.routing). An endpoint's cap is ``max_concurrency`` when the config gives it; else what its
server says, read by ``check`` (llama-server answers ``GET {root}/props`` with ``total_slots``; root is
the base URL without its trailing /v1; vLLM and SGLang name themselves in their model list's
``owned_by``: 256); else 8. ``parallel`` is the sum of the caps. Below its cap an endpoint's limit
adapts (``adaptive_concurrency``): halved by an overload answer, grown back by its answers.
``requests_per_minute`` and ``tokens_per_minute`` pace the backend as a whole. In batch mode (``batch``)
every sample goes through the first endpoint's Files and Batches endpoints instead (moot.backends.batches).

With several endpoints, one that fails with a connection error, a timeout or a 5xx is out of rotation
for ``cooldown_s`` (30 s; doubled on each further failure before a success, up to ten times that), and
its request is retried at once on another, within the same ``max_retries``; once the cool-down has
passed the endpoint is tried again. When every endpoint is out, a request waits for the soonest to
return; one that runs out of retries then fails with one error naming every endpoint's last failure.
With one endpoint nothing is taken out of rotation: its failures are retried with backoff, as above.
``check`` reaches every endpoint and verifies that each serves the model (the configured one, or the
one model of the first endpoint); an error names the endpoint that does not. Every sample records the
endpoint that answered it (``Sample.endpoint``, its URL with credentials masked).

The kind's config is moot.backends.openai_config; what a reply must be and how it is read,
moot.backends.openai_replies; how a server is reached (an endpoint's record, the SDK's HTTP client),
moot.backends.openai_transport; how a request is sent (the rotation, retries, pacing, one attempt),
moot.backends.openai_requests; token accounting, moot.backends.openai_usage.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from pydantic import ValidationError

from moot.backends.base import CALL_SESSION, GenerationRequest, Reply, Sample, TokenLogprob
from moot.backends.batches import Batcher, Ledger
from moot.backends.engine_record import EngineRecord
from moot.backends.local import sample_seed
from moot.backends.openai_replies import (
    _check_logprobs,
    _Choice,
    _Completion,
    _Failure,
    _json,
    _ModelList,
    _Usage,
    _validated,
)
from moot.backends.openai_requests import _Requests
from moot.backends.openai_transport import (
    _count,
    _Endpoint,
    _http_client,
    _http_library,
    _list_models,
    _model_ids,
    _root_url,
)
from moot.backends.openai_usage import _Cost, _tokens
from moot.backends.reasoning import split_reasoning
from moot.backends.routing import PrefixMap, TokenBudget, Window
from moot.errors import BackendError, ConfigError
from moot.redact import redact, redact_secrets, register_secret, register_url_secrets
from moot.trace import sample_record

if TYPE_CHECKING:
    from moot.backends.openai_config import OpenAIBackendConfig

# Local servers accept any key; the SDK refuses to start without one.
PLACEHOLDER_KEY = "no-key"
MAX_INTERVAL_S = 3600.0  # the longest requests_per_minute may space two requests: one an hour
BATCH_FILE_BYTES = 4 * 2**30  # the largest batch output or error file read (batch mode)
# the cap of a server that says what it is (its model list's owned_by) but not its slots: vLLM's
# --max-num-seqs and SGLang's running requests are 256 or more by default; more only queues in the server
SERVER_CONCURRENCY = {"vllm": 256, "sglang": 256}
PROPS_TIMEOUT_S = 10.0  # GET /props is a server's answer about itself: it is quick or it is not there
T = TypeVar("T")


class OpenAIBackend(_Requests):
    """One or several OpenAI-compatible chat-completions servers serving the same model."""

    name = "openai"

    def __init__(self, config: OpenAIBackendConfig):
        import openai

        urls = config.base_urls
        if not urls or not all(urls):
            raise ConfigError("the openai backend needs a base URL (--base-url, e.g. http://127.0.0.1:8080/v1)")
        key = os.environ.get(config.api_key_env)
        register_secret(key)
        self._endpoints: list[_Endpoint] = []
        for url in urls:
            register_url_secrets(url)
            # the SDK appends paths to a base URL's query; its parameters go with every request instead
            parts = urlsplit(url)
            shown = redact(url)
            if parts.scheme.lower() not in ("http", "https"):
                raise ConfigError(f"base URL {shown} is not an http:// or https:// URL")
            try:
                client = openai.AsyncOpenAI(
                    base_url=urlunsplit(parts._replace(query="", fragment="")),
                    default_query=dict(parse_qsl(parts.query)) or None,
                    api_key=key or PLACEHOLDER_KEY,
                    timeout=config.timeout_s,
                    max_retries=0,  # retried here, malformed replies too, within one bound
                    http_client=_http_client(shown, config.max_reply_bytes),
                )
            except (ValueError, _http_library().InvalidURL):  # a "/" in a password, not percent-encoded
                # not the library's words: they quote the piece of the URL it could not read, a password's
                hint = "percent-encode any of / ? # @ : in its user name or password"
                raise ConfigError(f"base URL {shown} is not a valid URL; {hint}") from None
            props, tokenize, version = (_root_url(parts, path) for path in ("props", "tokenize", "version"))
            window = Window(config.max_concurrency, adaptive=config.adaptive_concurrency)
            self._endpoints.append(_Endpoint(shown, client, props, tokenize, version, window))
        self.base_url = ", ".join(e.url for e in self._endpoints)  # what messages about the backend show
        self._model = config.model
        self._sized_by_server = "max_concurrency" not in config.model_fields_set  # a given limit always wins
        self._timeout_s = config.timeout_s
        self._max_retries = config.max_retries
        self._cooldown_s = config.cooldown_s if len(self._endpoints) > 1 else 0.0  # one: nowhere else to go
        self.retries = 0  # attempts made again, over the backend's life
        self._interval = 60.0 / config.requests_per_minute if config.requests_per_minute else 0.0
        if self._interval > MAX_INTERVAL_S:  # a wait between two requests longer than any run: refused, not waited
            raise ConfigError(
                f"requests_per_minute = {config.requests_per_minute:g} spaces requests {self._interval:.3g} s apart; "
                f"give at least {60.0 / MAX_INTERVAL_S:g} (one request an hour)"
            )
        self._tokens = TokenBudget(config.tokens_per_minute) if config.tokens_per_minute else None
        self._prefixes: PrefixMap[_Endpoint] | None = (
            PrefixMap() if config.routing == "affinity" and len(self._endpoints) > 1 else None
        )
        self._affinity_factor = config.affinity_factor
        self._session_header = config.session_header
        self._batch_options = (config.batch_poll_s, config.batch_deadline_s)
        self._batcher: Batcher | None = None
        if config.batch:
            self.use_batches()
        self._next_start = 0.0
        self._pace = asyncio.Lock()
        # requests waiting for an endpoint, first come first, each with the endpoint it prefers
        self._waiters: list[tuple[asyncio.Future[None], _Endpoint | None]] = []
        self._model_lock = asyncio.Lock()
        self._tokenize: bool | None = None  # whether the server shows its tokens (/tokenize); None: not yet asked

    @property
    def model_id(self) -> str:
        """``openai:URL:MODEL``; with several endpoints their URLs sorted and joined by commas."""
        return f"openai:{','.join(sorted(e.url for e in self._endpoints))}:{redact(self._model or '?')}"

    @property
    def supports_logprobs(self) -> bool:
        return True

    @property
    def parallel(self) -> int:
        """Requests in flight at most, over every endpoint (each one's cap, read from its server by ``check``);
        in batch mode, a batch's size: every question is in flight, each round goes out as one batch."""
        if self._batcher is not None:
            return self._batcher.max_requests
        return sum(e.window.cap for e in self._endpoints)

    def use_batches(self) -> None:
        """Send every sample through provider batches (moot.backends.batches), from the first endpoint."""
        if self._batcher is None:
            first = self._endpoints[0]
            poll_s, deadline_s = self._batch_options
            model = redact(self._model or "?")
            # its own bound: an output file holds up to 50,000 replies, where max_reply_bytes bounds one
            client = first.client.with_options(http_client=_http_client(first.url, BATCH_FILE_BYTES))
            self._batcher = Batcher(client, first.url, model, poll_s=poll_s, deadline_s=deadline_s)

    def use_ledger(self, ledger: Ledger) -> None:
        """Where batch ids are kept before polling (the run's store), so a rerun polls them again."""
        if self._batcher is not None:
            self._batcher.ledger = ledger

    def cap_concurrency(self, limit: int) -> None:
        """Every endpoint's cap is ``limit`` (the run's ``max_concurrency``), whatever its server says."""
        for endpoint in self._endpoints:
            endpoint.window.resize(limit)
        self._sized_by_server = False

    async def resolve_model(self) -> str:
        """The configured model, else the first endpoint's only model (asked once)."""
        async with self._model_lock:
            if self._model is None:
                first = self._endpoints[0]
                models = await self._server_models(first)
                if len(models) != 1:
                    raise ConfigError(
                        f"{first.url} serves {len(models)} models ({', '.join(models) or 'none'}); "
                        "choose one with --model"
                    )
                self._model = models[0]
        return self._model

    async def check(self) -> None:
        """Reach every endpoint (its model list) even when the model is given: a dead server or a refused key
        is one clear error before any store is made. When the model is given, a server without a model list
        (HTTP 404 or 405) is reachable. With several endpoints each must serve the model (the one the
        first endpoint serves when none is given): an error names the one that does not. Then each
        endpoint without a configured ``max_concurrency`` is sized by its server's slots where it says."""
        given = self._model is not None
        model = await self.resolve_model()
        first, *others = self._endpoints
        asked = self._endpoints if given else others
        lists = await _each(self._listed(e) for e in asked)
        served: dict[_Endpoint, list[str] | None] = {} if given else {first: [model]}
        served |= dict(zip(asked, lists, strict=True))
        if others:
            self._same_model(model, served)
        if self._sized_by_server:
            await _each(self._read_slots(e) for e in self._endpoints)

    async def _server_models(self, endpoint: _Endpoint) -> list[str]:
        def read(raw: Any, endpoint: _Endpoint) -> list[str]:
            return _model_ids(_validated(raw, _ModelList, endpoint.url), endpoint)

        models: list[str]
        models, _ = await self._attempts(_list_models, read, endpoint=endpoint)
        return models

    async def _listed(self, endpoint: _Endpoint) -> list[str] | None:
        """The endpoint's models; None when it has no model list (HTTP 404 or 405) or one moot cannot read."""

        def read(raw: Any, endpoint: _Endpoint) -> list[str] | None:
            try:
                return _model_ids(_validated(raw, _ModelList, endpoint.url), endpoint)
            except _Failure:
                return None

        models: list[str] | None
        models, _ = await self._attempts(_list_models, read, tolerate={404, 405}, endpoint=endpoint)
        return models

    @staticmethod
    def _same_model(model: str, served: dict[_Endpoint, list[str] | None]) -> None:
        """Every endpoint that lists its models lists ``model``; or, where none lists it (a server that
        answers to any name, as llama-server does, serves its own model), every one lists the same."""
        known = {e: models for e, models in served.items() if models is not None}
        if not known:
            return
        naming = [e for e, models in known.items() if model in models]
        reference, expected = next(iter(known.items()))
        for endpoint, models in known.items():
            if naming and model not in models:
                raise ConfigError(
                    f"{endpoint.url} does not serve {model} (it serves {', '.join(models) or 'no model'}; "
                    f"{naming[0].url} does): the endpoints of a backend must serve the same model"
                )
            if not naming and sorted(models) != sorted(expected):
                raise ConfigError(
                    f"{endpoint.url} serves {', '.join(models) or 'no model'}, {reference.url} serves "
                    f"{', '.join(expected) or 'no model'}: the endpoints of a backend must serve the same model"
                )

    async def _props(self, endpoint: _Endpoint, url: str | None = None) -> dict[str, Any]:
        """The endpoint's ``/props`` (llama-server's), or the JSON object at another ``url`` of its server (vLLM's
        ``/version``), within PROPS_TIMEOUT_S; {} where it has none or fails."""
        timeout = min(self._timeout_s, PROPS_TIMEOUT_S)

        async def props(client: Any) -> Any:
            return await client.get(url or endpoint.props_url, cast_to=str, options={"timeout": timeout})

        try:
            data = _json(await self._send(props, endpoint, timeout))
        except _Failure:
            return {}
        return data if isinstance(data, dict) else {}

    async def _read_slots(self, endpoint: _Endpoint) -> None:
        """The endpoint's cap from its server, where it says (llama-server: ``total_slots`` in /props); else
        from its kind, as its model list names it (``owned_by``: vLLM's and SGLang's, SERVER_CONCURRENCY);
        else the default."""
        data = await self._props(endpoint)
        slots = data.get("total_slots")
        if not _count(slots):
            slots = max((SERVER_CONCURRENCY.get(owner, 0) for owner in endpoint.owners), default=0)
        if slots:
            endpoint.window.resize(slots)
            self._wake()

    async def engine_record(self) -> EngineRecord:
        """What the first endpoint says it is: its model list's ``owned_by`` (read by ``check``) and, from
        llama-server's ``/props``, its build, slots and context per slot, or from vLLM's ``/version`` and model
        list, its version and context; ``openai-compatible`` where it says nothing. Its batch settings are the
        server's own, not known here."""
        endpoint = self._endpoints[0]
        data = await self._props(endpoint)
        settings = data.get("default_generation_settings")
        context = settings.get("n_ctx") if isinstance(settings, dict) else None
        build = data.get("build_info")
        slots = data.get("total_slots")
        if "vllm" in endpoint.owners:
            build = (await self._props(endpoint, endpoint.version_url)).get("version")
            context = endpoint.context
        return EngineRecord(
            engine=", ".join(sorted(endpoint.owners)) or "openai-compatible",
            version=build if isinstance(build, str) and build else None,
            slots=slots if _count(slots) else None,
            context=context if _count(context) else None,
        )

    async def generate(self, request: GenerationRequest) -> Reply:
        model = await self.resolve_model()
        samples = await asyncio.gather(*(self._sample(model, request, i) for i in range(request.n)))
        return Reply(samples=tuple(samples), model=self.model_id)

    def _params(self, model: str, request: GenerationRequest, index: int) -> dict[str, Any]:
        """The body of sample ``index``'s request (a subclass adds its server's own fields)."""
        params: dict[str, Any] = {
            "model": model,
            "messages": [m.as_dict() for m in request.messages],
            "n": 1,
            "temperature": request.temperature,
            "top_p": request.top_p,
            "max_tokens": request.max_tokens,
        }
        seed = sample_seed(request.seed, index)
        if seed is not None:
            params["seed"] = seed
        if request.stop:
            params["stop"] = list(request.stop)
        if request.logprobs:
            params["logprobs"] = True
        if request.reasoning_effort is not None:
            params["reasoning_effort"] = request.reasoning_effort
        if request.thinking is not None:
            params["extra_body"] = {"chat_template_kwargs": {"enable_thinking": request.thinking}}
        return params

    async def _sample(
        self,
        model: str,
        request: GenerationRequest,
        index: int,
        extra: dict[str, Any] | None = None,
        record: dict[str, Any] | None = None,
    ) -> Sample:
        """Sample ``index`` of ``request``; ``extra`` adds fields to its body (a managed server's slot), its
        ``extra_body`` merged with the request's own. ``record``: this sample's line of a ``--trace``
        (default: a new one when the call is traced)."""
        params = self._params(model, request, index)
        for name, value in (extra or {}).items():
            params[name] = params.get(name, {}) | value if name == "extra_body" else value
        if record is None:
            record = sample_record()

        session = CALL_SESSION.get()
        headers = {self._session_header: session} if session is not None and self._session_header else None

        def send(client: Any) -> Awaitable[Any]:
            if record is not None:
                record["sent"] = time.perf_counter()
            return client.chat.completions.with_raw_response.create(**params, extra_headers=headers)

        def check(completion: _Completion, url: str) -> tuple[_Choice, _Usage | None]:
            if record is not None:
                record["done"] = time.perf_counter()
                if isinstance(completion.timings, dict):
                    record["server"] = completion.timings
            choice = completion.choices[0]
            message = choice.message
            if message.content is None and not (message.reasoning_content or message.reasoning):
                raise _Failure(f"{url} returned a reply without message content (null)", retry=True)
            if request.logprobs:
                _check_logprobs(choice, completion.usage, request, url)
            return choice, completion.usage

        def read(raw: Any, endpoint: _Endpoint) -> tuple[_Choice, _Usage | None, _Endpoint]:
            return *check(_validated(raw, _Completion, endpoint.url), endpoint.url), endpoint

        def spent(value: tuple[_Choice, _Usage | None, _Endpoint]) -> int | None:
            usage = value[1]
            return usage.prompt_tokens + usage.completion_tokens if usage is not None else None

        batch = None
        if self._batcher is not None:
            (choice, usage, answering), start, batch = await self._batched(params, check)
        else:
            prefer = self._prefixes.find(request.messages) if self._prefixes is not None else None
            cost = _Cost(TokenBudget.prompt_estimate(request.messages), request.max_tokens, spent)
            (choice, usage, answering), start = await self._attempts(send, read, prefer=prefer, cost=cost)
        latency = time.perf_counter() - start
        logprobs = None
        if request.logprobs:
            assert choice.logprobs is not None and choice.logprobs.content is not None
            logprobs = tuple(TokenLogprob(token=t.token, logprob=float(t.logprob)) for t in choice.logprobs.content)
        message = choice.message
        split = split_reasoning(message.content or "", message.reasoning_content or message.reasoning)
        reasoning = redact_secrets(split.reasoning) if split.reasoning is not None else None
        text = redact_secrets(split.content)
        if self._prefixes is not None:
            self._prefixes.remember(request.messages, text, answering)
        details = usage.completion_tokens_details if usage else None
        reasoning_tokens = details.reasoning_tokens if details else None
        cached = usage.prompt_tokens_details if usage else None
        if reasoning is not None and reasoning_tokens is None:
            reasoning_tokens = await self.count_tokens(reasoning)
        if record is not None and usage is not None:
            record |= {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens}
        return Sample(
            text=text,
            finish_reason=choice.finish_reason or "unknown",
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            latency_s=latency,
            logprobs=logprobs,
            endpoint=answering.url,
            reasoning=reasoning,
            reasoning_tokens=reasoning_tokens,
            batch=batch,
            cached_tokens=cached.cached_tokens if cached else None,
        )

    async def _batched(
        self, params: dict[str, Any], check: Callable[[_Completion, str], tuple[_Choice, _Usage | None]]
    ) -> tuple[tuple[_Choice, _Usage | None, _Endpoint], float, str]:
        """One sample through a provider batch: its reply read and checked as a live reply is (a reply that
        is not a chat completion is a failed call, not retried: the batch has ended); when its wait began;
        the batch that answered it."""
        assert self._batcher is not None
        start = time.perf_counter()
        body = {name: value for name, value in params.items() if name != "extra_body"} | params.get("extra_body", {})
        data, batch = await self._batcher.submit(body)
        endpoint = self._endpoints[0]
        try:
            choice, usage = check(_Completion.model_validate(data), endpoint.url)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "the reply"
            raise BackendError(f"batch {batch} returned a malformed reply ({where}: {first['msg']})") from None
        except _Failure as failure:
            raise BackendError(f"batch {batch}: {failure.message}") from None
        return (choice, usage, endpoint), start, batch

    async def count_tokens(self, text: str) -> int | None:
        """How many tokens ``text`` is for the served model (its server's ``/tokenize``); None when unknown."""
        tokenized = await self._tokenized(text)
        return tokenized[0] if tokenized is not None else None

    async def token_pieces(self, text: str) -> list[str] | None:
        """``text`` as the served model's tokens, each as text (llama-server's pieces, which rebuild the text);
        None when the server does not show them so (vLLM's token strings are its vocabulary's, not text)."""
        tokenized = await self._tokenized(text)
        pieces = tokenized[1] if tokenized is not None else None
        return pieces if pieces is not None and "".join(pieces) == text else None

    async def _tokenized(self, text: str) -> tuple[int, list[str] | None] | None:
        """``text``'s token count and pieces from the first endpoint's ``/tokenize`` (llama-server's and
        vLLM's); None where the server has none or answers otherwise, and then it is not asked again."""
        if self._tokenize is False:
            return None
        endpoint = self._endpoints[0]
        body: dict[str, Any] = {"content": text, "with_pieces": True, "prompt": text, "add_special_tokens": False}
        if self._model:
            body["model"] = self._model

        timeout = min(self._timeout_s, PROPS_TIMEOUT_S)

        async def post(client: Any) -> Any:
            return await client.post(endpoint.tokenize_url, body=body, cast_to=str, options={"timeout": timeout})

        try:
            tokenized = _tokens(_json(await self._send(post, endpoint, timeout)))
        except _Failure:
            tokenized = None
        if self._tokenize is None:
            self._tokenize = tokenized is not None
        return tokenized

    async def aclose(self) -> None:
        if self._batcher is not None:
            await self._batcher.aclose()
        for endpoint in self._endpoints:
            await endpoint.client.close()


async def _each(calls: Iterable[Awaitable[T]]) -> list[T]:
    """Every call's result, run at once; the first failure in their order is raised once all have ended."""
    results = await asyncio.gather(*calls, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results  # type: ignore[return-value]
