"""The HTML report in a real browser: Debian's headless Chromium driven by Selenium through chromedriver.

Checks that the tables and plots render offline, that the transcript filters work, and that a
model reply containing <script> (and other markup) shows as text and never runs. Needs the
``chromium`` and ``chromium-driver`` Debian packages (the test setup installs them).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from moot.analysis import build_report
from moot.analysis.formatting import fixed, interval
from moot.analysis.html import write_html
from moot.analysis.records import Report
from tests.fixtures.analysis_run import MODELS, PAYLOAD, QUESTIONS, experiment
from tests.helpers import WriteRun

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")


def test_the_browser_is_installed() -> None:
    """`make test` installs Debian's chromium and chromium-driver; a missing browser fails, never skips."""
    assert CHROMIUM.exists() and CHROMEDRIVER.exists(), "apt-get install chromium chromium-driver"


@pytest.fixture(scope="module")
def built(write_run: WriteRun) -> tuple[Report, Path]:
    store = write_run("browser", experiment(), MODELS)
    report = build_report(store, resamples=1000)
    return report, write_html(report, store.parent / "report.html")


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    from selenium import webdriver as selenium
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="moot-chromium-")
    options = selenium.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--window-size=1280,1600",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # an explicit driver path: selenium-manager never tries to download a browser or driver
    driver = selenium.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def visible_transcripts(driver: object) -> list[object]:
    """The transcripts the page shows now (laid out, so not hidden by a filter), in one round trip."""
    return driver.execute_script(  # type: ignore[attr-defined, no-any-return]
        "return Array.from(document.querySelectorAll('details.transcript')).filter(e => e.offsetParent !== null)"
    )


def choose(driver: object, select_id: str, value: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    Select(driver.find_element(By.ID, select_id)).select_by_value(value)  # type: ignore[attr-defined]


def test_the_report_renders_filters_and_never_runs_model_text(built: tuple[Report, Path], browser: object) -> None:
    from selenium.webdriver.common.by import By

    report, page = built
    driver = browser
    driver.get(page.as_uri())  # type: ignore[attr-defined]
    assert driver.title == "moot report: analysis"  # type: ignore[attr-defined]

    # tables: the overview shows every condition with its accuracy and Wilson interval
    overview = driver.find_element(By.CSS_SELECTOR, 'table[data-key="overview"]')  # type: ignore[attr-defined]
    assert overview.is_displayed() and overview.size["height"] > 50
    rows = [
        [td.text for td in tr.find_elements(By.TAG_NAME, "td")]
        for tr in overview.find_elements(By.CSS_SELECTOR, "tbody tr")
    ]
    conditions = report.tasks[0].conditions
    assert [r[0] for r in rows] == [c.name for c in conditions]
    for row, c in zip(rows, conditions):
        assert row[4] == fixed(c.accuracy.estimate) and row[5] == interval(c.accuracy.low, c.accuracy.high)
    pairs = driver.find_element(By.CSS_SELECTOR, 'table[data-key="pairs"]')  # type: ignore[attr-defined]
    assert len(pairs.find_elements(By.CSS_SELECTOR, "tbody tr")) == 3 and "McNemar p" in pairs.text
    transitions = driver.find_element(By.CSS_SELECTOR, 'table[data-key="transitions"]')  # type: ignore[attr-defined]
    assert transitions.is_displayed()

    # plots: every embedded PNG decodes (data: URIs, allowed by the page's policy)
    images = driver.find_elements(By.CSS_SELECTOR, "figure img")  # type: ignore[attr-defined]
    assert len(images) == 5  # accuracy, by round, stopping, cost, frontier (the run has a vote pool)
    loaded = "return arguments[0].complete && arguments[0].naturalWidth"
    widths = [driver.execute_script(loaded, i) for i in images]  # type: ignore[attr-defined]
    assert all(w > 100 for w in widths)

    # filters
    count = driver.find_element(By.ID, "f-count")  # type: ignore[attr-defined]
    assert count.text == f"{3 * QUESTIONS} of {3 * QUESTIONS} shown"
    society = [t for t in report.transcripts if t.condition == "society"]
    choose(driver, "f-condition", "society")
    shown = visible_transcripts(driver)
    assert len(shown) == QUESTIONS and {e.get_attribute("data-condition") for e in shown} == {"society"}
    choose(driver, "f-correct", "0")
    wrong = [t for t in society if not t.correct]
    shown = visible_transcripts(driver)
    assert [e.get_attribute("data-question") for e in shown] == [t.question_id for t in wrong]
    assert count.text == f"{len(wrong)} of {3 * QUESTIONS} shown"
    choose(driver, "f-correct", "")
    choose(driver, "f-changed", "1")
    changed = [t for t in society if t.changed]
    assert 0 < len(changed) < QUESTIONS
    assert [e.get_attribute("data-question") for e in visible_transcripts(driver)] == [t.question_id for t in changed]
    choose(driver, "f-condition", "single")
    assert visible_transcripts(driver) == [] and count.text == f"0 of {3 * QUESTIONS} shown"
    choose(driver, "f-condition", "")
    choose(driver, "f-changed", "")
    assert len(visible_transcripts(driver)) == 3 * QUESTIONS

    # a debate, round by round; the model's <script> and markup are text
    choose(driver, "f-condition", "society")
    first = visible_transcripts(driver)[0]
    first.find_element(By.TAG_NAME, "summary").click()
    rounds = first.find_elements(By.CSS_SELECTOR, ".round")
    assert [r.find_element(By.TAG_NAME, "h4").text for r in rounds] == ["Round 0", "Round 1", "Round 2"]
    reply = rounds[0].find_element(By.CSS_SELECTOR, "pre.reply")
    assert reply.is_displayed() and PAYLOAD in reply.text and 'onerror="window.__moot_pwned = 3"' in reply.text
    assert "vote:" in rounds[0].text and "→" in rounds[0].text
    shown_box = rounds[1].find_element(By.CSS_SELECTOR, "details.shown")
    shown_box.find_element(By.TAG_NAME, "summary").click()
    assert "other agents" in shown_box.text and "So the answer is" in shown_box.text
    assert driver.execute_script("return typeof window.__moot_pwned") == "undefined"  # type: ignore[attr-defined]
    assert (
        driver.execute_script(  # type: ignore[attr-defined]
            "return document.querySelectorAll('.transcript script, .transcript img, .transcript [onmouseover]').length"
        )
        == 0
    )
    first.find_element(By.CSS_SELECTOR, "pre.reply").click()  # hovering or clicking the text does nothing either
    assert driver.execute_script("return typeof window.__moot_pwned") == "undefined"  # type: ignore[attr-defined]
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]  # type: ignore[attr-defined]
    assert errors == []
