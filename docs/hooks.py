"""MkDocs hooks for moot's manual (mkdocs.yml names this file under ``hooks``; it is no page of the site).

README.md, the repository's front page, is the site's front page too (``index.md``), and its links into docs/
become links between the site's pages. Links that leave docs/ (to the examples, the source, README.md) are
checked here, since MkDocs knows only the files under docs/: a target that does not exist in the repository,
or a README.md anchor that names no heading of it, is a warning, which ``mkdocs build --strict`` turns into
an error. Such a link is then written as the path from the page's HTML file to that file in the repository, so
it works in a site built inside the repository (``make docs``: site/), as it does on GitHub.
"""

from __future__ import annotations

import logging
import os
import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

log = logging.getLogger(f"mkdocs.plugins.{__name__}")

REPO_SCHEME = "moot-repo:"  # a link's placeholder between the Markdown and the HTML: MkDocs leaves a scheme alone
LINK = re.compile(r"\]\(([^()\s]+)\)")
CODE_SPAN = re.compile(r"(`+)(?:.+?)\1")
HEADING = re.compile(r"^#{1,6} (.*)$")


def github_anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation but hyphens dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def headings(text: str) -> set[str]:
    """The anchors of a Markdown file's headings (those inside fenced code blocks are not headings)."""
    fenced, anchors = False, set()
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and (heading := HEADING.match(line)):
            anchors.add(github_anchor(re.sub(r"`", "", heading.group(1))))
    return anchors


def _root(config: Any) -> Path:
    return Path(config.config_file_path).resolve().parent


def _source(page: Any) -> str:
    """The page's Markdown file, as a path in the repository."""
    return "README.md" if page.file.src_uri == "index.md" and page.file.generated_by else f"docs/{page.file.src_uri}"


def on_files(files: Files, config: Any) -> Files:
    readme = (_root(config) / "README.md").read_text(encoding="utf-8")
    files.append(File.generated(config, "index.md", content=readme))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    root, source = _root(config), _source(page)
    page_folder = posixpath.dirname(page.file.src_uri)

    def relink(match: re.Match[str]) -> str:
        target = match.group(1)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith(("#", "/")):
            return match.group(0)  # a URL, an anchor on this page (MkDocs checks both of these ones), or absolute
        path, _, anchor = target.partition("#")
        in_repo = posixpath.normpath(posixpath.join(posixpath.dirname(source), path))
        if in_repo == "docs" or in_repo.startswith("docs/"):  # a page or file of the site: MkDocs checks it
            in_docs = posixpath.relpath(in_repo, "docs")
            new = posixpath.relpath(in_docs, page_folder or ".")
            return f"]({new}{'#' + anchor if anchor else ''})"
        file = root / in_repo
        if in_repo.startswith("../") or not file.exists():
            log.warning(f"{source} links to '{target}': there is no {in_repo} in the repository")
        elif anchor and file.suffix == ".md" and anchor not in headings(file.read_text(encoding="utf-8")):
            log.warning(f"{source} links to '{target}': {in_repo} has no heading with the anchor '{anchor}'")
        return f"]({REPO_SCHEME}{in_repo}{'#' + anchor if anchor else ''})"

    lines, fenced = [], False
    for line in markdown.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            spans = [(m.start(), m.end()) for m in CODE_SPAN.finditer(line)]
            parts, at = [], 0
            for start, end in spans:  # links outside inline code only
                parts += [LINK.sub(relink, line[at:start]), line[start:end]]
                at = end
            line = "".join([*parts, LINK.sub(relink, line[at:])])
        lines.append(line)
    return "\n".join(lines)


def on_page_content(html: str, page: Any, config: Any, files: Files) -> str:
    root = _root(config)
    folder = Path(config.site_dir).resolve() / posixpath.dirname(page.file.dest_uri)

    def resolve(match: re.Match[str]) -> str:
        path, _, anchor = match.group(2).partition("#")
        relative = Path(os.path.relpath(root / path, folder)).as_posix()
        return f'{match.group(1)}="{relative}{"#" + anchor if anchor else ""}"'

    return re.sub(rf'\b(href|src)="{re.escape(REPO_SCHEME)}([^"]*)"', resolve, html)
