"""Regressions for what issue 59's hostile review (benchmarks/hostile.py, items 13 to 18) found: a plug-in
file's rule silently replacing another file's rule of the same class name, a plug-in task factory returning
no task, a batch output answering one request twice, a request pace with no useful bound, and shards of two
moot versions merged as one."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from moot.backends import batches
from moot.backends.openai_api import OpenAIBackend
from moot.backends.openai_config import OpenAIBackendConfig
from moot.debate import registry
from moot.debate.registry import FILE_PLUGIN, load_plugin
from moot.errors import ConfigError
from moot.runner.config_files import parse_experiment
from moot.runner.experiment import run_experiment
from moot.runner.shards import Shard, merge_shards
from moot.tasks import TASKS, new_task
from moot.tasks.catalog import catalog
from tests.helpers import query
from tests.integration.servers import CANNED_MODEL, BatchServer

# -- plug-in files: two classes Plateau of kind "plateau" ------------------------------------------------------
PLATEAU = """
from typing import Literal
from moot.debate.registry import register
from moot.debate.components.stopping import Stopping

@register
class Plateau(Stopping):
    kind: Literal["plateau"] = "plateau"
    marker: str = "MARKER"
"""


@pytest.fixture
def own_stopping_rules() -> Iterator[None]:
    """The stopping rules without any "plateau" (examples/plugins/plateau.py's, if a test loaded it), put back as
    they were after the test, so that what it registers is gone."""
    rules = registry.rules("stopping")
    saved = dict(rules)
    rules.pop("plateau", None)
    yield
    rules.clear()
    rules.update(saved)


def test_a_second_plugin_file_defining_the_same_rule_is_refused_by_name(
    tmp_path: Path, own_stopping_rules: None
) -> None:
    one, two = tmp_path / "one.py", tmp_path / "two.py"
    one.write_text(PLATEAU.replace("MARKER", "one"))
    two.write_text(PLATEAU.replace("MARKER", "two"))
    load_plugin(one)
    with pytest.raises(ConfigError) as refused:
        load_plugin(two)
    message = str(refused.value)
    assert "stopping rule 'plateau' is already registered by Plateau in" in message
    assert str(one.resolve()) in message and str(two.resolve()) in message
    assert registry.rules("stopping")["plateau"]().marker == "one"  # the first stays


def test_a_copy_of_a_plugin_file_elsewhere_is_the_same_rule(tmp_path: Path, own_stopping_rules: None) -> None:
    """The same class text from another path (two experiments carrying one plug-in, in one notebook): accepted."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for folder in ("a", "b"):
        (tmp_path / folder / "plateau.py").write_text(PLATEAU.replace("MARKER", "same"))
        load_plugin(tmp_path / folder / "plateau.py")
    assert registry.rules("stopping")["plateau"]().marker == "same"


def test_the_same_plugin_file_run_again_registers_its_rule_again(tmp_path: Path, own_stopping_rules: None) -> None:
    """Its class is the same module's and name: not another rule, so it replaces itself."""
    one = tmp_path / "one.py"
    one.write_text(PLATEAU.replace("MARKER", "one"))
    load_plugin(one)
    first = registry.rules("stopping")["plateau"]
    name = FILE_PLUGIN + "".join(c if c.isalnum() else "_" for c in str(one.resolve()))
    try:
        module = sys.modules[name]
        assert module.__spec__ is not None and module.__spec__.loader is not None
        module.__spec__.loader.exec_module(module)  # its code run again, as a reload does
        assert registry.rules("stopping")["plateau"] is not first
        assert registry.rules("stopping")["plateau"]().marker == "one"
    finally:
        del sys.modules[name]


def test_a_second_backend_class_of_a_kind_is_refused_even_with_the_same_name() -> None:
    """As for rules: two classes ``Mine`` of kind "mine" from two modules; the first stays."""
    from typing import Literal

    from moot.backends import config as backends
    from moot.backends import settings

    def mine(module: str) -> type[backends.BackendSettings]:
        cls = type(
            "Mine",
            (backends.BackendSettings,),
            {"__module__": module, "__annotations__": {"kind": Literal["mine"]}, "kind": "mine"},
        )
        return cls

    try:
        first = backends.register_backend(mine("plugin_one"))
        assert backends.register_backend(first) is first  # the same class again: itself
        with pytest.raises(ConfigError, match=r"backend kind 'mine' is already registered by plugin_one\.Mine; "):
            backends.register_backend(mine("plugin_two"))
        assert backends.BACKEND_KINDS["mine"] is first
    finally:  # the registry lives in moot.backends.settings (config re-exports it): "mine" leaves no trace
        settings.BACKEND_KINDS.pop("mine", None)


# -- a plug-in task factory that returns no task ---------------------------------------------------------------
def make_five() -> Any:
    return 5


def test_a_plugin_task_factory_returning_no_task_is_one_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(TASKS, "hostile-five", make_five)
    expected = r"plug-in task 'hostile-five' \(from .*\) made int, not a task \(it has no card, questions, render"
    with pytest.raises(ConfigError, match=expected):
        new_task("hostile-five")
    with pytest.raises(ConfigError, match=expected):  # `moot tasks` lists every task's card
        catalog()


# -- a batch output answering a request twice, differently -----------------------------------------------------
class Doubling(BatchServer):
    """A BatchServer whose output files answer each request a second time, with another reply."""

    def _dispatch(self, method: str, target: str, headers: dict[str, str], body: bytes) -> tuple[int, bytes, str]:
        status, payload, kind = super()._dispatch(method, target, headers, body)
        if (
            method == "GET"
            and target.endswith("/content")
            and b'"custom_id"' in payload
            and b"chat.completion" in payload
        ):
            doubled = b""
            for line in payload.splitlines(keepends=True):
                other = json.loads(line)
                other["response"]["body"]["choices"][0]["message"]["content"] = "The answer is 999."
                doubled += line + json.dumps(other).encode() + b"\n"
            payload = doubled
        return status, payload, kind


@pytest.fixture
def doubling(monkeypatch: pytest.MonkeyPatch) -> Iterator[Doubling]:
    monkeypatch.setattr(batches, "GATHER_S", 0.3)
    made = Doubling()
    yield made
    made.close()


def batch_experiment(url: str) -> dict[str, Any]:
    backend = {"kind": "openai", "base_url": url, "model": CANNED_MODEL, "batch": True, "batch_poll_s": 0.05}
    return {
        "name": "batched",
        "tasks": [{"name": "arithmetic", "count": 2}],
        "agent": {"backend": backend, "sampling": {"temperature": 0.0, "max_tokens": 24}},
        "conditions": [{"name": "single", "protocol": "single"}],
    }


def test_a_request_answered_twice_differently_is_not_answered(doubling: Doubling, tmp_path: Path) -> None:
    path = tmp_path / "run.sqlite"
    asyncio.run(run_experiment(parse_experiment(batch_experiment(doubling.url)), path))
    assert query(path, "SELECT status, count(*) FROM results GROUP BY status") == [("error", 2)]
    assert query(path, "SELECT count(*) FROM turns WHERE text LIKE '%999%'") == [(0,)]
    errors = [e for (e,) in query(path, "SELECT error FROM results")]
    assert all("answered it on several lines that differ" in (e or "") for e in errors), errors


def test_a_request_on_two_identical_lines_is_answered() -> None:
    line = {"custom_id": "moot-a", "response": {"status_code": 200, "body": {"id": "x", "choices": []}}}
    data = (json.dumps(line) + "\n" + json.dumps(line) + "\n").encode()
    assert batches._lines(data, "batch-1") == {"moot-a": {"id": "x", "choices": []}}


# -- requests_per_minute that spaces requests beyond any run ---------------------------------------------------
@pytest.mark.parametrize("per_minute", [1e-9, 0.0166])
def test_a_pace_slower_than_one_request_an_hour_is_refused(per_minute: float) -> None:
    config = OpenAIBackendConfig(base_url="http://127.0.0.1:9/v1", model="m", requests_per_minute=per_minute)
    with pytest.raises(ConfigError, match=r"requests_per_minute = .* s apart; give at least 0.0166667"):
        OpenAIBackend(config)


def test_one_request_an_hour_is_a_pace() -> None:
    config = OpenAIBackendConfig(base_url="http://127.0.0.1:9/v1", model="m", requests_per_minute=1 / 60)
    assert OpenAIBackend(config)._interval == pytest.approx(3600.0)


# -- shards of two moot versions -------------------------------------------------------------------------------
def shards(folder: Path) -> list[Path]:
    data = {
        "name": "sharded",
        "tasks": [{"name": "arithmetic", "count": 4}],
        "agent": {"backend": {"kind": "scripted", "model": "numbers"}, "sampling": {"temperature": 0.0}},
        "conditions": [{"name": "single", "protocol": "single"}],
    }
    made = []
    for index in (1, 2):
        path = folder / f"s{index}.sqlite"
        asyncio.run(run_experiment(parse_experiment(data), path, shard=Shard(index, 2)))
        made.append(path)
    return made


def versioned(path: Path, version: str) -> None:
    with sqlite3.connect(path) as db:
        db.execute("UPDATE meta SET value = ? WHERE key = 'moot_version'", (json.dumps(version),))
    db.close()


def test_shards_of_two_moot_versions_are_not_merged(tmp_path: Path) -> None:
    one, two = shards(tmp_path)
    merge_shards(tmp_path / "same.sqlite", [one, two])  # the same version: merged
    versioned(two, "0.0.1-other")
    with pytest.raises(ConfigError, match=r"s2.sqlite and .*s1.sqlite differ in their run's moot_version"):
        merge_shards(tmp_path / "out.sqlite", [one, two])
    assert not (tmp_path / "out.sqlite").exists()
