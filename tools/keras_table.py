"""Write the table of supported Keras layers in docs/torchx-keras.md from the converter table.

python tools/keras_table.py           # rewrite the table between the markers
python tools/keras_table.py --check   # exit 1 if it is out of date (torchx-keras's tests do this)
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

PAGE = Path(__file__).resolve().parents[1] / "docs" / "torchx-keras.md"
_TABLE = re.compile(r"(<!-- keras-layers -->\n)(?P<body>.*?)(<!-- keras-layers: end -->)", re.DOTALL)


def table() -> str:
    from torchx.keras import supported_layers

    groups: dict[str, list[str]] = {}
    for name, becomes in supported_layers().items():
        groups.setdefault(becomes, []).append(f"`{name}`")
    rows = [f"| {', '.join(names)} | {becomes} |" for becomes, names in groups.items()]
    return "\n".join(["| Keras layer | becomes |", "|---|---|", *sorted(rows)]) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report an out-of-date table; write nothing")
    options = parser.parse_args()
    text = PAGE.read_text(encoding="utf-8")
    updated = _TABLE.sub(lambda match: match.group(1) + table() + match.group(3), text)
    if updated == text:
        return 0
    if options.check:
        print(
            f"{PAGE.name}: the supported-layers table is out of date; run python tools/keras_table.py",
            file=sys.stderr,
        )
        return 1
    PAGE.write_text(updated, encoding="utf-8")
    print(f"wrote the table in {PAGE.name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
