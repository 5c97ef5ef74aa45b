"""``moot view`` in a real browser: Debian's headless Chromium driven by Selenium through chromedriver, as
tests/test_report_browser.py sets it up.

A page opened on a running experiment (a slow scripted ``moot run`` in a subprocess) shows its done count rise
without a reload; a transcript opens round by round; a model reply holding ``<script>`` and an ``<img onerror>``
shows as text and never runs.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from moot.backends.base import GenerationRequest
from tests.fixtures.live import serving, slow_run
from tests.helpers import WriteRun, arithmetic_experiment
from tests.test_report_browser import CHROMEDRIVER, CHROMIUM
from tests.test_report_browser import browser as browser  # the same headless Chromium fixture

pytestmark = pytest.mark.browser

HOSTILE = '<script>window.__pwned=1</script> <img src=x onerror="window.__pwned=2"> So the answer is 7.'


def test_the_browser_is_installed() -> None:
    assert CHROMIUM.exists() and CHROMEDRIVER.exists(), "apt-get install chromium chromium-driver"


def hostile(request: GenerationRequest, index: int) -> str:
    return HOSTILE


@pytest.fixture(scope="module")
def hostile_store(write_run: WriteRun) -> Path:
    conditions = [{"name": "society", "protocol": "society", "agents": 2, "rounds": 2}]
    experiment = arithmetic_experiment("hostile", conditions, 3, "hostile")
    return write_run("hostile", experiment, {"hostile": hostile}, file="hostile.sqlite")


def wait_for(driver: object, script: str, timeout: float = 30) -> object:
    """The first truthy value of ``script`` (JavaScript returning a value), polled until ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = driver.execute_script(script)  # type: ignore[attr-defined]
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for: {script}"
        time.sleep(0.1)


DONE = "var e = document.querySelector('#total td.done'); return e ? Number(e.dataset.done) + 1 : 0;"


def test_the_page_shows_a_running_experiment_progress_rising(browser: object, tmp_path: Path) -> None:
    driver = browser
    with slow_run(tmp_path, count=6, delay=0.4) as (store, process), serving(store) as server:
        driver.get(server.url)  # type: ignore[attr-defined]
        first = int(wait_for(driver, DONE)) - 1  # type: ignore[call-overload]
        driver.execute_script("window.__same_page = 1;")  # type: ignore[attr-defined]
        assert first < 12
        status = driver.find_element("id", "status").text  # type: ignore[attr-defined]
        assert status.startswith("running")
        rising = wait_for(driver, f"return Number(document.querySelector('#total td.done').dataset.done) > {first};")
        assert rising
        assert driver.execute_script("return window.__same_page;") == 1  # updated in place, never reloaded
        row = driver.find_element("css selector", "#total td.done .count").text  # type: ignore[attr-defined]
        assert row.endswith("/ 12")
        # the list of finished questions follows the count
        # (the list is fetched by its own poll, so it may lag the count by one update: wait for it, bounded)
        listed = wait_for(driver, f"return document.querySelectorAll('#results-body tr.result').length >= {first + 1};")
        assert listed is True
        assert process.wait(120) == 0
        wait_for(driver, "return document.getElementById('status').textContent === 'complete';")
        cells = driver.find_elements("css selector", "#progress-body tr td.done .count")  # type: ignore[attr-defined]
        assert [c.text for c in cells] == ["6 / 6", "6 / 6"]
        assert driver.execute_script("return window.__same_page;") == 1


def test_a_transcript_opens_round_by_round_and_model_markup_never_runs(browser: object, hostile_store: Path) -> None:
    driver = browser
    with serving(hostile_store) as server:
        driver.get(server.url)  # type: ignore[attr-defined]
        wait_for(driver, "return document.querySelectorAll('#results-body tr.result').length === 3;")
        driver.find_element("css selector", "#results-body tr.result").click()  # type: ignore[attr-defined]
        wait_for(driver, "return document.querySelectorAll('#transcript .round').length === 2;")
        rounds = driver.find_elements("css selector", "#transcript .round")  # type: ignore[attr-defined]
        assert [r.get_attribute("data-round") for r in rounds] == ["0", "1"]
        assert [r.find_element("tag name", "h4").text for r in rounds] == ["Round 0", "Round 1"]
        replies = driver.find_elements("css selector", "#transcript pre.reply")  # type: ignore[attr-defined]
        assert len(replies) == 4  # 2 agents x 2 rounds
        assert all(r.text == HOSTILE for r in replies)  # the markup shows as text
        # what agent-1 was shown in round 1: its peer's round-0 reply, as text too
        shown = rounds[1].find_element("css selector", ".turn details.shown")
        shown.find_element("tag name", "summary").click()
        assert "<script>window.__pwned=1</script>" in shown.text
        # search and filter
        driver.find_element("id", "f-q").send_keys("no such question")  # type: ignore[attr-defined]
        wait_for(driver, "return document.getElementById('page-info').textContent === '0–0 of 0';")
        assert driver.execute_script("return typeof window.__pwned;") == "undefined"  # type: ignore[attr-defined]
        assert not driver.find_elements("css selector", "#transcript img, #results img, #transcript script")  # type: ignore[attr-defined]
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]  # type: ignore[attr-defined]
        assert errors == []
