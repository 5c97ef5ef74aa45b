"""What a reply of an OpenAI-compatible server must be, and how the ``openai`` backend (moot.backends.openai_api)
reads it: the shapes of a chat completion and of a model list (strict types, extra fields ignored), the reply's
body read and validated (``_validated``), its log-probabilities checked against its token counts
(``_check_logprobs``), and ``_Failure``, a failed attempt, which is what every wrong reply becomes."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from moot.backends.base import GenerationRequest
from moot.backends.openai_usage import _Count

LOGPROB_SLACK = 1e-6  # a log-probability may pass 0 by a float's rounding, no more
LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # what json.loads makes of a lone "\\ud800"


# -- what a reply must be (extra fields are ignored; types are strict: "12" is not a token count) --------
class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)

    @field_validator("*")
    @classmethod
    def _no_lone_surrogates(cls, value: Any) -> Any:
        """Every text of a reply storable and printable (see ``_readable``)."""
        return _readable(value) if isinstance(value, str) else value


class _Token(_Strict):
    token: str
    logprob: float = Field(allow_inf_nan=False, le=LOGPROB_SLACK)


class _Logprobs(_Strict):
    content: list[_Token] | None = None


class _Message(_Strict):
    content: str | None = None
    reasoning_content: str | None = None  # vLLM, SGLang, llama-server (--reasoning-format), DeepSeek
    reasoning: str | None = None  # vLLM's newer name, OpenRouter


class _Choice(_Strict):
    message: _Message
    finish_reason: str | None = None
    logprobs: _Logprobs | None = None


class _Details(_Strict):
    reasoning_tokens: _Count | None = None


class _PromptDetails(_Strict):
    cached_tokens: _Count | None = None  # prompt tokens the server had cached (OpenAI, vLLM, llama-server)


class _Usage(_Strict):
    prompt_tokens: _Count = 0
    completion_tokens: _Count = 0
    completion_tokens_details: _Details | None = None
    prompt_tokens_details: _PromptDetails | None = None


class _Completion(_Strict):
    choices: list[_Choice] = Field(min_length=1)
    usage: _Usage | None = None
    timings: Any = None  # llama-server's own: prompt and generation times (read only by --trace)


class _ModelEntry(_Strict):
    id: str
    owned_by: Any = None  # "vllm", "sglang", "llamacpp", "openai", ...: sizes an endpoint (SERVER_CONCURRENCY)
    max_model_len: Any = None  # vLLM's context window, tokens


class _ModelList(_Strict):
    data: list[_ModelEntry]


class _Failure(Exception):
    """A failed attempt: what to report, whether to try again, the server's Retry-After, and whether the
    endpoint itself is failing (a connection error, a timeout, a 5xx: it is taken out of rotation)."""

    def __init__(
        self,
        message: str,
        retry: bool,
        retry_after: float | None = None,
        status: int | None = None,
        down: bool = False,
    ):
        message = _readable(message)
        super().__init__(message)
        self.message = message
        self.retry = retry
        self.retry_after = retry_after
        self.status = status
        self.down = down


def _validated(raw: Any, shape: type[_Strict], url: str) -> Any:
    """The reply's JSON body as ``shape``, or a retryable _Failure saying what is wrong with it."""
    content_type = str(raw.headers.get("content-type", ""))
    body: bytes = raw.content
    if "json" not in content_type.lower():
        excerpt = _short(body.decode("utf-8", "replace"), 80)
        shown = content_type or "no content type"
        raise _Failure(f"{url} returned {shown}, not JSON (HTTP {raw.status_code}): {excerpt}", True)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _Failure(
            f"{url} returned a reply that is not valid UTF-8 ({exc.reason} at byte {exc.start})", True
        ) from None
    try:
        data = json.loads(text)
        if isinstance(data, dict) and "error" in data and "choices" not in data and "data" not in data:
            error = data["error"]
            message = error.get("message", error) if isinstance(error, dict) else error
            raise _Failure(f"{url} returned an error: {_short(str(message))}", True)
        return shape.model_validate(data)
    except json.JSONDecodeError as exc:
        where = f"{exc.msg}, character {exc.pos} of {len(text)}"
        raise _Failure(f"{url} returned a reply that is not valid JSON, truncated? ({where})", True) from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the reply"
        raise _Failure(f"{url} returned a malformed reply ({where}: {first['msg']})", True) from None
    except ValueError as exc:  # a number of more than 4,300 digits
        raise _Failure(f"{url} returned a reply that moot cannot read ({_short(str(exc))})", True) from None
    except RecursionError:  # json.loads (or str) of brackets nested thousands deep
        raise _Failure(f"{url} returned a reply nested too deeply to read", True) from None


def _check_logprobs(choice: _Choice, usage: _Usage | None, request: GenerationRequest, url: str) -> None:
    """The log-probabilities asked for are there, one per generated token where that can be told: real
    servers send fewer for a stop string's tokens (llama-server), for the end token (llama-cpp-python,
    finish_reason "stop") and for a reasoning model's thinking (counted in ``completion_tokens``)."""
    tokens = choice.logprobs.content if choice.logprobs is not None else None
    if tokens is None:
        raise _Failure(f"{url} returned no log-probabilities although they were asked for", retry=False)
    details = usage.completion_tokens_details if usage is not None else None
    message = choice.message
    if (
        usage is None
        or "completion_tokens" not in usage.model_fields_set
        or request.stop
        or message.reasoning_content
        or message.reasoning
        or (details is not None and details.reasoning_tokens)
    ):
        return
    unscored = 1 if choice.finish_reason == "stop" else 0
    if len(tokens) < usage.completion_tokens - unscored:
        count = f"{len(tokens)} log-probabilities for {usage.completion_tokens} generated tokens"
        raise _Failure(f"{url} returned {count}", retry=True)


def _readable(text: str) -> str:
    """``text`` with each lone surrogate (which no store or terminal can write) as U+FFFD."""
    return LONE_SURROGATE.sub("\ufffd", text)


def _json(text: str) -> Any:
    """``text`` as JSON; None where it is none, or too deep or too long to read."""
    try:
        return json.loads(text)
    except (ValueError, TypeError, RecursionError):
        return None


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
