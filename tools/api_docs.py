"""Write the tables of docs/*.md that no docstring holds: every layer of torchx.layers, and the Keras layers torchx-keras converts.

    python tools/api_docs.py           # rewrite the tables between the markers
    python tools/api_docs.py --check   # exit 1 if a table is out of date (tests/test_docs.py does this)

A table sits between ``<!-- api: TABLE -->`` and ``<!-- api: end -->``; the
rest of the API reference is rendered from the docstrings by mkdocstrings
(``::: torchx.core`` in a page; see mkdocs.yml). Pipes inside a cell's code
are escaped (``\\|``), as GitHub's tables need; tools/docs_site.py unescapes
them for the site.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import re
import sys
from collections.abc import Callable
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"
_SECTION = re.compile(r"(<!-- api: (?P<table>[\w.]+) -->\n)(?P<body>.*?)(<!-- api: end -->)", re.DOTALL)


class _Written(str):
    """An annotation as written in the source (``inspect`` would quote a string)."""

    def __repr__(self) -> str:
        return str(self)


def signature(cls: type) -> str:
    """The constructor's parameters of ``cls`` as written, without ``self``; pipes escaped for a table."""
    parameters = [
        p.replace(annotation=_Written(p.annotation)) if isinstance(p.annotation, str) else p
        for p in inspect.signature(cls).parameters.values()
    ]
    return str(inspect.Signature(parameters)).replace("|", "\\|")


def layer_table() -> list[str]:
    """Every layer class of torchx.layers: its arguments, what it infers, what it builds."""
    from torchx.core import Layer, LeafLayer

    module = importlib.import_module("torchx.layers")
    rows = ["| layer | arguments | inferred from the input | builds |", "|---|---|---|---|"]
    for name in module.__all__:
        cls = getattr(module, name)
        if not (isinstance(cls, type) and issubclass(cls, Layer)) or cls is Layer or cls.__name__ != name:
            continue
        inferred, native = "—", "—"
        if issubclass(cls, LeafLayer):
            inferred = ", ".join(cls.inferred_arguments) or "—"
            if cls.native_class:
                native = f"`{cls.native_class.__module__.split('.')[0]}.{cls.native_class.__qualname__}`"
        rows.append(f"| `{name}` | `{signature(cls)}` | {inferred} | {native} |")
    return rows


def keras_table() -> list[str]:
    """The Keras layers torchx-keras converts, grouped by what they become."""
    from torchx.keras import supported_layers

    groups: dict[str, list[str]] = {}
    for name, becomes in supported_layers().items():
        groups.setdefault(becomes, []).append(f"`{name}`")
    rows = sorted(f"| {', '.join(names)} | {becomes} |" for becomes, names in groups.items())
    return ["| Keras layer | becomes |", "|---|---|", *rows]


TABLES: dict[str, Callable[[], list[str]]] = {
    "torchx.layers": layer_table,
    "torchx.keras.layers": keras_table,
}


def updated(text: str, page: str) -> str:
    def table(match: re.Match[str]) -> str:
        name = match.group("table")
        if name not in TABLES:
            raise SystemExit(f"{page}: no table {name!r}; the tables are {', '.join(TABLES)}")
        return f"{match.group(1)}\n" + "\n".join(TABLES[name]()) + f"\n\n{match.group(4)}"

    return _SECTION.sub(table, text)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--check", action="store_true", help="report pages that are out of date; write nothing"
    )
    options = parser.parse_args()
    stale = []
    for page in sorted(DOCS.glob("*.md")):
        text = page.read_text(encoding="utf-8")
        new = updated(text, page.name)
        if new != text:
            stale.append(page.name)
            if not options.check:
                page.write_text(new, encoding="utf-8")
    if options.check and stale:
        print(f"out of date: {', '.join(stale)}; run: python tools/api_docs.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
