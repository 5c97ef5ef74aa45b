"""Cached prompt tokens (issue 55): the openai backend keeps what the server says it had cached
(``usage.prompt_tokens_details.cached_tokens``) on each sample, the store keeps it in the call's reply, and
``usage`` and ``--budget cost`` price those tokens at ``[prices]``' ``cached_prompt``. A store written before
moot recorded them reads as None and prices as before. The server is real HTTP on 127.0.0.1, recording every
request; the same against a real llama-server: tests/integration/test_openai_backend.py.

Hand-checked figures (USD per million tokens: prompt 1.00, cached prompt 0.25, completion 4.00). A round-0 call
reports 100 prompt tokens, 40 of them cached, and 20 completion tokens: 60 x 1 + 40 x 0.25 + 20 x 4 = 150 µ$
(180 µ$ with no cached price). A later round's call (it shows the peers' replies) reports 200 prompt tokens, 150
cached: 50 x 1 + 150 x 0.25 + 20 x 4 = 167.5 µ$ (280 µ$). Per question, the 6-answer pool pays 6 round-0 calls
and the 2 x 2 debate adds 2 (its round 0 is the pool's first two answers, shared): 6 x 150 + 2 x 167.5 =
1235 µ$, 2470 µ$ over the 2 questions (before: 6 x 180 + 2 x 280 = 1640, 3280). The debate uses 2 x 150 + 2 x
167.5 = 635 µ$ per question, matched by the vote of 5 answers at 750 µ$ (before: 920 µ$, matched by 6 at 1080).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from moot.analysis.budget import equal_budget
from moot.analysis.budget_costs import priced
from moot.analysis.cli import app
from moot.backends.base import GenerationRequest, Message, Reply, Sample
from moot.backends.config import OpenAIBackendConfig
from moot.backends.openai_api import OpenAIBackend
from moot.runner.config import Price
from moot.runner.store import RunStore
from moot.runner.store.codec import reply_from_json, reply_to_json
from moot.runner.summary import summarize, usage
from tests.helpers import WriteRun, arithmetic_experiment
from tests.integration.servers import JSONHandler, Served

MODEL = "cachey"
ANSWER = "The answer is 4."
PRICE = {"prompt": 1.0, "completion": 4.0, "cached_prompt": 0.25}  # USD per million tokens


class Caching(Served):
    """A chat-completions server that reports cached prompt tokens as OpenAI, vLLM and llama-server do: a
    first-round request (no reply of the server's in it) 100 prompt tokens, 40 cached; a later one 200, 150
    cached; 20 completion tokens each. ``bodies`` holds every chat request's body as sent."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        server = self

        class Handler(JSONHandler):
            models = (MODEL,)

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.bodies.append(body)
                later = ANSWER in json.dumps(body["messages"])
                prompt, cached = (200, 150) if later else (100, 40)
                usage = {
                    "prompt_tokens": prompt,
                    "completion_tokens": 20,
                    "prompt_tokens_details": {"cached_tokens": cached},
                }
                message = {"role": "assistant", "content": ANSWER}
                self._json(200, {"choices": [{"message": message, "finish_reason": "stop"}], "usage": usage})

        self.serve(Handler)


@pytest.fixture(scope="module")
def server() -> Iterator[Caching]:
    made = Caching()
    yield made
    made.close()


@pytest.fixture(scope="module")
def run(server: Caching, write_run: WriteRun) -> Path:
    """A 6-answer vote and a 2 x 2 society on 2 arithmetic questions, answered by the caching server."""
    conditions = [
        {"name": "vote", "protocol": "vote", "agents": 6},
        {"name": "society", "protocol": "society", "agents": 2, "rounds": 2},
    ]
    agent = {"backend": {"kind": "openai", "base_url": server.url, "model": MODEL, "logprobs": False}}
    return write_run("cached", arithmetic_experiment("cached", conditions, 2, agent=agent, prices={MODEL: PRICE}))


@pytest.fixture(scope="module")
def before(run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same store as moot wrote it before it recorded cached tokens: no ``cached_tokens`` in any reply."""
    path = tmp_path_factory.mktemp("before") / "run.sqlite"
    shutil.copy(run, path)
    db = sqlite3.connect(path)
    with db:
        for key, text in db.execute("SELECT key, reply FROM calls").fetchall():
            reply = json.loads(text)
            for sample in reply["samples"]:
                del sample["cached_tokens"]
            db.execute("UPDATE calls SET reply = ? WHERE key = ?", (json.dumps(reply), key))
    db.close()
    return path


def test_a_sample_keeps_the_cached_tokens_the_server_reports(server: Caching) -> None:
    async def ask() -> Reply:
        backend = OpenAIBackend(OpenAIBackendConfig(base_url=server.url, model=MODEL, max_retries=0))
        try:
            return await backend.generate(GenerationRequest(messages=(Message("user", "What is 2+2?"),), n=2))
        finally:
            await backend.aclose()

    reply = asyncio.run(ask())
    assert [(s.prompt_tokens, s.cached_tokens) for s in reply.samples] == [(100, 40), (100, 40)]
    assert not any("cached" in json.dumps(body) for body in server.bodies)  # nothing new is sent


def test_a_reply_stores_its_cached_tokens_and_one_stored_before_reads_none() -> None:
    sample = Sample("4", "stop", 100, 20, 0.5)
    assert "cached_tokens" not in reply_to_json(Reply((sample,), "m"))  # not reported: stored as before
    cached = Reply((Sample("4", "stop", 100, 20, 0.5, cached_tokens=40),), "m")
    assert reply_from_json(reply_to_json(cached)) == cached
    old = '{"model": "m", "samples": [{"text": "4", "finish_reason": "stop", "prompt_tokens": 100, '
    old += '"completion_tokens": 20, "latency_s": 0.5, "logprobs": null}]}'
    assert reply_from_json(old).samples[0].cached_tokens is None


def test_the_store_holds_each_calls_cached_tokens(run: Path) -> None:
    store = RunStore.read(run)
    try:
        calls = store.calls()
        replies = [store.cached_reply(c.key) for c in calls]
        per_result = store.cached_prompt_tokens()
    finally:
        store.close()
    assert len(calls) == 2 * (6 + 2)  # society's round 0 is the pool's first two answers
    assert sorted(c.cached_tokens for c in calls) == [40] * 12 + [150] * 4
    assert all(r is not None and r.samples[0].cached_tokens == c.cached_tokens for r, c in zip(replies, calls))
    assert sorted(per_result.values()) == [6 * 40] * 2 + [2 * 40 + 2 * 150] * 2


def test_usage_prices_cached_prompt_tokens_at_their_price(run: Path, before: Path) -> None:
    for path, dollars in ((run, 2470e-6), (before, 3280e-6)):
        store = RunStore.read(path)
        try:
            _, total = summarize(store)
            calls = store.calls()
        finally:
            store.close()
        assert (total.usage.calls, total.usage.prompt_tokens) == (16, 12 * 100 + 4 * 200)
        assert total.usage.cost == pytest.approx(dollars, rel=1e-12)
    # without a cached price, cached tokens cost the prompt price: the figures of a store that reports none
    plain = {MODEL: Price(prompt=1.0, completion=4.0)}
    assert usage(calls, [], plain, lambda unit: None)[None].cost == pytest.approx(3280e-6, rel=1e-12)


def test_the_cost_budget_prices_cached_prompt_tokens_at_their_price(run: Path, before: Path) -> None:
    (now,) = equal_budget(run, "society", measure="cost", resamples=50)
    assert (now.pool, now.k, now.pool_too_small) == ("vote", 5, False)
    assert now.debate_cost == pytest.approx(635e-6, rel=1e-12)
    assert now.vote_cost == pytest.approx(5 * 150e-6, rel=1e-12)
    (old,) = equal_budget(before, "society", measure="cost", resamples=50)
    assert (old.k, old.pool_too_small) == (6, False)
    assert old.debate_cost == pytest.approx(920e-6, rel=1e-12)
    assert old.vote_cost == pytest.approx(6 * 180e-6, rel=1e-12)
    result = CliRunner().invoke(app, ["compare", str(run), "society", "--budget", "cost"])
    assert result.exit_code == 0, result.output
    assert "US dollars" in result.output


def test_a_cached_price_is_a_price_and_prices_only_cached_tokens() -> None:
    price = Price(**PRICE)
    assert price.microdollars(100, 20, 40) == 150.0 and price.microdollars(100, 20) == 180.0
    assert Price(prompt=1.0, completion=4.0).microdollars(100, 20, 40) == 180.0  # no cached price: the prompt's
    assert priced(1, 100, 20, price, 40).cost == pytest.approx(150e-6, rel=1e-12)
    assert priced(1, 100, 20, price).cost == (100 * 1.0 + 20 * 4.0) / 1e6  # exactly as before
    for bad in (-0.1, float("inf")):
        with pytest.raises(ValidationError, match="cached_prompt"):
            Price(prompt=1.0, completion=4.0, cached_prompt=bad)
