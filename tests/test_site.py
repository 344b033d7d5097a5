"""The documentation as a reader's browser gets it: the site built by MkDocs (as `.ci/run`
builds it) and its HTML read back. No paragraph starts with a literal `- ` (a list that
markdown did not see as one, after a table in a list item, say), no table or list sits
inside a list item where it would render as text, every internal link and anchor
resolves, and every page is reachable from the navigation. Skipped without the `[docs]`
extra; `.ci/run` installs it and runs this file."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

pytest.importorskip("mkdocs", reason="the [docs] extra builds the site")
pytest.importorskip("material", reason="the [docs] extra builds the site")

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parent.parent


class _Page(HTMLParser):
    """What the checks need from one built page."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.nav_links: list[str] = []
        self.paragraphs: list[str] = []
        self._stack: list[str] = []
        self._nav = 0
        self._text: list[str] | None = None
        self._in_content = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attr = dict(attrs)
        if attr.get("id"):
            self.ids.add(str(attr["id"]))
        if tag == "a" and attr.get("href"):
            (self.nav_links if self._nav else self.links).append(str(attr["href"]))
        if tag == "nav" and "md-nav--primary" in (attr.get("class") or ""):
            self._nav = 1
        elif tag == "nav" and self._nav:
            self._nav += 1
        if tag == "article":
            self._in_content += 1
        if tag == "p" and self._in_content:
            self._text = []
        if tag not in ("br", "img", "hr", "input", "meta", "link"):
            self._stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "nav" and self._nav:
            self._nav -= 1
        if tag == "article":
            self._in_content -= 1
        if tag == "p" and self._text is not None:
            self.paragraphs.append("".join(self._text))
            self._text = None
        if tag in self._stack:
            while self._stack and self._stack.pop() != tag:
                pass

    def handle_data(self, data: str) -> None:
        if self._text is not None:
            self._text.append(data)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(out)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def _pages(site: Path) -> dict[Path, _Page]:
    pages = {}
    for html in sorted(site.rglob("*.html")):
        if html.name == "404.html":
            continue
        page = _Page()
        page.feed(html.read_text(encoding="utf-8"))
        pages[html] = page
    return pages


def _target(site: Path, page: Path, href: str) -> tuple[Path, str] | None:
    """The file and anchor an internal link points to; None for an external one."""
    parts = urlsplit(href)
    if parts.scheme or parts.netloc or href.startswith(("mailto:", "javascript:")):
        return None
    path = page if not parts.path else (page.parent / unquote(parts.path)).resolve()
    if path.is_dir():
        path = path / "index.html"
    return path, unquote(parts.fragment)


def test_no_paragraph_is_a_list_rendered_as_text(site: Path) -> None:
    bad = [
        f"{html.relative_to(site)}: {text[:80]!r}"
        for html, page in _pages(site).items()
        for text in page.paragraphs
        if re.match(r"\s*[-*] ", text) or re.search(r"\n\s*- \S|\|---", text)
    ]
    assert bad == []


def test_every_internal_link_and_anchor_resolves(site: Path) -> None:
    pages = _pages(site)
    broken = []
    for html, page in pages.items():
        for href in page.links + page.nav_links:
            found = _target(site, html, href)
            if found is None:
                continue
            path, anchor = found
            if not path.exists():
                broken.append(f"{html.relative_to(site)}: {href} (no file)")
            elif anchor and path.suffix == ".html":
                target = pages.get(path)
                if target is not None and anchor not in target.ids:
                    broken.append(f"{html.relative_to(site)}: {href} (no anchor)")
    assert broken == []


def test_every_page_is_reachable_from_the_navigation(site: Path) -> None:
    pages = _pages(site)
    home = site / "index.html"
    reachable = {home}
    for href in pages[home].nav_links:
        found = _target(site, home, href)
        if found is not None and found[0].suffix == ".html":
            reachable.add(found[0])
    built = {p for p in pages if p.parent.name != "search"}
    assert built - reachable == set()
    assert len(built) >= 14


def test_the_repository_files_the_pages_link_are_published(site: Path) -> None:
    assert (site / "examples/ci/github-actions.yml").read_text() == (
        ROOT / "examples/ci/github-actions.yml"
    ).read_text()
    assert (site / "action.yml").read_text() == (ROOT / "action.yml").read_text()
