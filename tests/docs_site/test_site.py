"""The documentation site in a real browser: every page loads, and the search finds what it should.

``tox -e docs`` builds the site (``mkdocs build --strict``) and runs this with
``TORCHX_DOCS_SITE`` naming the built folder; without it the site is built
here first. The site is served on a free localhost port and opened in
Debian's Chromium (``/usr/bin/chromium``) through playwright, which never
downloads a browser of its own; without Chromium the tests skip. The
``examples`` env leaves this folder out: playwright and mkdocs are the docs
env's.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def nav_pages() -> dict[str, str]:
    """The Markdown files of mkdocs.yml's navigation, in order, with their titles there."""

    def walk(entries: list[Any]) -> Iterator[tuple[str, str]]:
        for entry in entries:
            for title, value in entry.items():
                yield from walk(value) if isinstance(value, list) else [(value, title)]

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    return dict(walk(config["nav"]))


def heading(page: str) -> str:
    """The page's first-level heading as its Markdown writes it (index.md is the README)."""
    source = ROOT / ("README.md" if page == "index.md" else f"docs/{page}")
    first = next(line for line in source.read_text(encoding="utf-8").splitlines() if line.startswith("# "))
    return first[2:].replace("`", "").strip()


def shown_heading(page: Any) -> str:
    """The text of the page's ``h1`` as shown, without its permalink sign."""
    return str(page.locator("article h1").first.inner_text()).removesuffix("¶").strip()


def url_path(page: str) -> str:
    """Where mkdocs (directory URLs) puts ``page``."""
    return "" if page == "index.md" else f"{page.removesuffix('.md')}/"


PAGES = nav_pages()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    built = os.environ.get("TORCHX_DOCS_SITE")
    if built:
        return Path(built)
    folder = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(folder)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}{done.stderr}"
    return folder


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def base_url(site: Path) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/"
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.skip(f"Debian's Chromium is not installed at {CHROMIUM} (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def tab(browser: Any) -> Iterator[tuple[Any, list[str]]]:
    """A fresh page, and the errors it reports: console errors, uncaught exceptions, failed requests."""
    context = browser.new_context()
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(f"uncaught: {error}"))
    page.on("requestfailed", lambda request: errors.append(f"request failed: {request.url}"))
    yield page, errors
    context.close()


@pytest.mark.parametrize("page_name", list(PAGES), ids=list(PAGES))
def test_each_page_loads_with_its_heading_and_no_errors(
    page_name: str, base_url: str, tab: tuple[Any, list[str]]
) -> None:
    page, errors = tab
    response = page.goto(base_url + url_path(page_name), wait_until="load")
    assert response is not None and response.ok, f"{page_name}: HTTP {response and response.status}"
    title = heading(page_name)
    assert shown_heading(page) == title
    assert page.title() == ("TorchX" if page_name == "index.md" else f"{PAGES[page_name]} - TorchX")
    page.wait_for_load_state("networkidle")
    assert errors == [], f"{page_name}: {errors}"


SEARCHES = [
    pytest.param("Conv2d", "/torchx-layers/", "torchx.layers.Conv2d", id="a-layer"),
    pytest.param("load_weights", "/torchx-core/", "torchx.load_weights", id="a-function"),
]


@pytest.mark.parametrize(("query", "path", "anchor"), SEARCHES)
def test_the_search_box_finds_the_right_page(
    query: str, path: str, anchor: str, base_url: str, tab: tuple[Any, list[str]]
) -> None:
    page, errors = tab
    page.goto(base_url, wait_until="load")
    page.locator("input.md-search__input").click()
    page.keyboard.type(query)  # as a reader types: the search listens to the keys
    results = page.locator("a.md-search-result__link")
    results.first.wait_for(timeout=20_000)
    hits = [urlsplit(link.get_attribute("href") or "") for link in results.all()]
    target = next((hit for hit in hits if (hit.path, hit.fragment) == (path, anchor)), None)
    assert target is not None, (
        f"no result for {query!r} links to {path}#{anchor}: {[h.geturl() for h in hits]}"
    )
    page.goto(target.geturl(), wait_until="load")
    assert page.locator(f"[id='{anchor}']").is_visible()
    assert errors == []


def test_the_reference_shows_roles_as_code_and_each_object_once(site: Path) -> None:
    """Docstrings' Sphinx roles (``:func:`build```) render as code, their ``:param:``
    fields as a parameter table, and an object exported by several modules has one anchor."""
    for page in PAGES:
        html = (site / url_path(page) / "index.html").read_text(encoding="utf-8")
        assert not re.search(r":(func|class|meth|data|mod|attr):`", html), page
        anchors = re.findall(r'id="(torchx[.\w]*)"', html)
        assert len(anchors) == len(set(anchors)), page
    core = (site / "torchx-core" / "index.html").read_text(encoding="utf-8")
    assert 'id="torchx.build"' in core and 'id="torchx.core.build"' not in core
    assert "Parameters:" in core
