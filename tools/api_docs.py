"""Write the API sections of docs/*.md from the code: typed signatures and first docstring lines.

    python tools/api_docs.py           # rewrite the sections between the markers
    python tools/api_docs.py --check   # exit 1 if a page is out of date (the tests do this)

Each page keeps its own prose; only the text between ``<!-- api: MODULE -->``
and ``<!-- api: end -->`` is generated, so signatures in the docs cannot drift
from the code.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import re
import sys
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parents[1] / "docs"
_SECTION = re.compile(r"(<!-- api: (?P<module>[\w.]+) -->\n)(?P<body>.*?)(<!-- api: end -->)", re.DOTALL)


def first_line(obj: Any) -> str:
    doc = inspect.getdoc(obj) or ""
    return doc.split("\n\n")[0].replace("\n", " ").strip()


def signature(obj: Any, *, skip_self: bool = False) -> str:
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return "(...)"
    parts = []
    for index, parameter in enumerate(sig.parameters.values()):
        if skip_self and index == 0 and parameter.name in ("self", "cls"):
            continue
        text = parameter.name
        if parameter.kind is parameter.VAR_POSITIONAL:
            text = f"*{text}"
        elif parameter.kind is parameter.VAR_KEYWORD:
            text = f"**{text}"
        if parameter.annotation is not parameter.empty:
            text += f": {_annotation(parameter.annotation)}"
        if parameter.default is not parameter.empty:
            text += (
                f" = {parameter.default!r}"
                if parameter.annotation is not parameter.empty
                else f"={parameter.default!r}"
            )
        parts.append(text)
    keyword_only = [p for p in sig.parameters.values() if p.kind is p.KEYWORD_ONLY]
    if keyword_only and not any(p.kind is p.VAR_POSITIONAL for p in sig.parameters.values()):
        names = [p.name for p in sig.parameters.values() if not (skip_self and p.name in ("self", "cls"))]
        parts.insert(names.index(keyword_only[0].name), "*")
    returns = sig.return_annotation
    arrow = f" -> {_annotation(returns)}" if returns not in (sig.empty, None, "None") else ""
    return f"({', '.join(parts)}){arrow}"


def _annotation(annotation: Any) -> str:
    return annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)


def _own_methods(cls: type) -> list[tuple[str, Any]]:
    found = []
    for name, value in cls.__dict__.items():
        if name.startswith("_") or not (
            inspect.isfunction(value) or isinstance(value, (classmethod, property))
        ):
            continue
        found.append((name, value))
    return found


def render_class(name: str, cls: type) -> list[str]:
    if "__init__" in cls.__dict__:
        header = f"{name}{signature(cls.__init__, skip_self=True)}"
    else:  # no constructor of its own: say what it derives from
        header = f"class {name}({', '.join(base.__name__ for base in cls.__bases__)})"
    lines = [f"### `{header}`", "", first_line(cls), ""]
    for method_name, method in _own_methods(cls):
        if isinstance(method, property):
            lines.append(f"- `{method_name}` (property): {first_line(method)}")
        else:
            function = method.__func__ if isinstance(method, classmethod) else method
            lines.append(f"- `{method_name}{signature(function, skip_self=True)}`: {first_line(function)}")
    return [*lines, ""] if lines[-1] != "" else lines


def render_layer_table(module: Any) -> list[str]:
    from torchx.core import Layer, LeafLayer

    rows = ["| layer | arguments | inferred from the input | builds |", "|---|---|---|---|"]
    for name in module.__all__:
        cls = getattr(module, name)
        if not (isinstance(cls, type) and issubclass(cls, Layer)) or cls is Layer or cls.__name__ != name:
            continue
        leaf = issubclass(cls, LeafLayer)
        inferred = (", ".join(cls.inferred_arguments) if leaf else "") or "—"
        native = (
            f"`{cls.native_class.__module__.split('.')[0]}.{cls.native_class.__qualname__}`"
            if leaf and cls.native_class
            else "—"
        )
        rows.append(f"| `{name}` | `{signature(cls.__init__, skip_self=True)}` | {inferred} | {native} |")
    return [*rows, ""]


def render_keras_table() -> list[str]:
    """The Keras layers torchx-keras converts, grouped by what they become."""
    from torchx.keras import supported_layers

    groups: dict[str, list[str]] = {}
    for name, becomes in supported_layers().items():
        groups.setdefault(becomes, []).append(f"`{name}`")
    rows = sorted(f"| {', '.join(names)} | {becomes} |" for becomes, names in groups.items())
    return ["| Keras layer | becomes |", "|---|---|", *rows, ""]


def render(module_name: str) -> str:
    if module_name == "torchx.keras.layers":  # a table, not a module
        return "\n".join(render_keras_table())
    module = importlib.import_module(module_name)
    if module_name == "torchx.layers":
        return "\n".join(render_layer_table(module))
    lines: list[str] = []
    for name in sorted(getattr(module, "__all__", [])):
        if name.startswith("__"):
            continue
        obj = getattr(module, name)
        if inspect.isclass(obj):
            lines += render_class(name, obj)
        elif callable(obj):
            lines += [f"### `{name}{signature(obj)}`", "", first_line(obj), ""]
        else:
            lines += [
                f"### `{name}`",
                "",
                f"`{obj!r}`" if isinstance(obj, (int, str)) else type(obj).__name__,
                "",
            ]
    return "\n".join(lines)


def updated(text: str) -> str:
    return _SECTION.sub(lambda m: f"{m.group(1)}\n{render(m.group('module'))}\n{m.group(4)}", text)


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
        new = updated(text)
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
