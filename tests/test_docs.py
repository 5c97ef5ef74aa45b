"""The manual as a site (issue 60): README.md is a front page (at most 200 lines, linking every page of the
manual), every page under docs/ is in mkdocs.yml's nav, and `mkdocs build --strict` builds the site, failing
on a link to a missing page or file, an anchor that names no heading or a page left out of the nav. The
build needs the docs extra (MkDocs and its Material theme), which `make test` and `make docs` install."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.test_readme import installed_extras, makefile_targets

ROOT = Path(__file__).parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
MKDOCS = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
PAGES = sorted(path.name for path in (ROOT / "docs").glob("*.md"))
NOT_INSTALLED = "the docs extra is not installed (mkdocs-material): `make docs` or `make test` installs it"


def nav() -> list[str]:
    """The pages of mkdocs.yml's nav, in its order."""
    return re.findall(r"^\s*- (?:[^\n]*: )?(\S+\.md)\s*$", MKDOCS, re.M)


def test_the_readme_is_a_front_page_that_links_the_manual() -> None:
    assert len(README.splitlines()) <= 200, f"README.md has {len(README.splitlines())} lines: a front page has 200"
    linked = set(re.findall(r"\]\(docs/([\w.-]+\.md)(?:#[^)]*)?\)", README))
    assert set(PAGES) <= linked, f"pages of the manual the README does not link: {sorted(set(PAGES) - linked)}"
    assert "## The manual" in README and "`make docs`" in README


def test_the_nav_lists_every_page_once() -> None:
    pages = nav()
    assert pages[0] == "index.md", "the site's front page is README.md, made index.md by docs/hooks.py"
    assert not (ROOT / "docs" / "index.md").exists()
    assert len(pages) == len(set(pages)), "a page is twice in the nav"
    assert sorted(pages[1:]) == PAGES, f"nav and docs/ differ: {sorted(set(pages[1:]) ^ set(PAGES))}"


def test_the_build_is_strict_and_checks_links_and_anchors() -> None:
    assert re.search(r"^strict: true$", MKDOCS, re.M)
    assert re.search(r"^hooks:\n  - docs/hooks\.py$", MKDOCS, re.M)
    links = re.search(r"^  links:\n((?:    \w+: \w+\n)+)", MKDOCS, re.M)
    assert links is not None
    for check in ("not_found", "anchors", "unrecognized_links"):
        assert f"    {check}: warn\n" in links.group(1), f"validation.links.{check} must warn (strict: an error)"
    assert re.search(r"^  nav:\n(?:    \w+: \w+\n)*    omitted_files: warn$", MKDOCS, re.M)


def test_make_docs_and_make_test_install_the_docs_extra() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (pin,) = pyproject["project"]["optional-dependencies"]["docs"]
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert pin == "mkdocs-material==" + re.findall(r"^MKDOCS_MATERIAL := (\S+)$", makefile, re.M)[0]
    targets = makefile_targets()
    assert "docs" in installed_extras("docs", targets) and "docs" in installed_extras("test", targets)
    assert "$(BIN)/mkdocs build --strict --site-dir site" in targets["docs"][1]
    assert re.search(r"^site/$", (ROOT / ".gitignore").read_text(encoding="utf-8"), re.M)


def build(config_dir: Path, site: Path) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("mkdocs", reason=NOT_INSTALLED)
    pytest.importorskip("material", reason=NOT_INSTALLED)
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)]
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(command, cwd=config_dir, env=env, capture_output=True, text=True, timeout=300)


def test_the_site_builds_in_strict_mode(tmp_path: Path) -> None:
    result = build(ROOT, tmp_path / "site")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARNING" not in result.stdout + result.stderr
    for page in ["index.md", *PAGES]:
        assert (tmp_path / "site" / page.replace(".md", ".html")).is_file(), page
    front = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert "make demo" in front and 'href="cli.html"' in front and 'src="results/across-frontier.png"' in front


def test_a_broken_link_or_anchor_fails_the_build(tmp_path: Path) -> None:
    """The same build on a copy of the manual with one broken link of each kind: each one is named."""
    pytest.importorskip("mkdocs", reason=NOT_INSTALLED)
    from mkdocs import __version__

    assert tuple(int(part) for part in __version__.split(".")[:2]) >= (1, 6), "anchors are validated from MkDocs 1.6"
    for entry in ROOT.iterdir():  # the repository, its docs/ copied and the rest linked
        if entry.name == "docs":
            shutil.copytree(entry, tmp_path / "docs", ignore=shutil.ignore_patterns("__pycache__"))
        elif entry.name in ("README.md", "mkdocs.yml"):
            shutil.copy(entry, tmp_path / entry.name)
        elif entry.name not in ("site", ".git"):
            (tmp_path / entry.name).symlink_to(entry)
    broken = {
        "cli.md#no-such-heading": "does not contain an anchor '#no-such-heading'",
        "#nowhere-here": "there is no such anchor on this page",
        "no-such-page.md": "'no-such-page.md', but the target is not found",
        "../examples/no-such-file.toml": "there is no examples/no-such-file.toml in the repository",
        "../README.md#no-such-heading": "README.md has no heading with the anchor 'no-such-heading'",
    }
    with (tmp_path / "docs" / "theory.md").open("a", encoding="utf-8") as page:
        page.write("\n" + " ".join(f"[broken]({target})" for target in broken) + "\n")
    with (tmp_path / "README.md").open("a", encoding="utf-8") as readme:
        readme.write("\n[broken](docs/cli.md#nor-this-one)\n")
    result = build(tmp_path, tmp_path / "site")
    output = result.stdout + result.stderr
    assert result.returncode != 0 and "Aborted with 6 warnings in strict mode" in output, output
    for target, said in broken.items():
        assert said in output, f"[broken]({target}) passed: {output}"
    assert "'cli.md#nor-this-one', but the doc 'cli.md' does not contain an anchor" in output
