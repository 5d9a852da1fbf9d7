"""A pytest plugin that finds parametrised test ids that depend on position.

An id part that says where a case sits in its list, not what it is, changes
when a case is added or removed above it: pytest's default ``<argname><index>``
for a value it cannot name (``spec3``, ``shapes10``), an index given as the id
(``ids=range(n)``, ``id=f"case{i}"``), and the counter pytest appends to ids
that repeat (``<lambda>0``, ``Reshape1``; pytest reports those itself when run
with ``-o strict_parametrization_ids=true``). ``test_test_ids.py`` collects
every suite with this plugin (``-p param_id_guard``) and fails on what it finds.

It writes JSON to the path in ``$TORCHX_PARAM_ID_REPORT``: ``{"checked": the
number of parametrised tests, "positional": [[node id, why], ...], "errors":
[[node id, text], ...]}`` (errors: files that could not be collected).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping

import pytest

REPORT = "TORCHX_PARAM_ID_REPORT"

#: Words that, followed by a number, name a position rather than a case.
NUMBERED = re.compile(r"(?:param|case|example|item|sample|entry)_?\d+", re.IGNORECASE)


def positional_parts(test_id: str, indices: Mapping[str, int], params: Mapping[str, object]) -> list[str]:
    """Why each position-based part of ``test_id`` (the text between a test's
    brackets) is one. ``indices`` and ``params`` are the test's callspec's:
    each argument's index in its parameter list, and its value."""
    found = []
    defaults = {f"{name}{index}": name for name, index in indices.items()}
    values = {str(value) for value in params.values() if isinstance(value, int | str)}
    for part in test_id.split("-"):
        if part in values:  # a value that names itself
            continue
        if part in defaults:
            found.append(f"{part}: pytest's default id for {defaults[part]!r}, its index in the list")
        elif NUMBERED.fullmatch(part):
            found.append(f"{part}: a numbered case, not a named one")
        elif part.isdigit() and int(part) in indices.values():
            found.append(f"{part}: the case's index, not one of its values")
    return found


class Guard:
    def __init__(self) -> None:
        self.checked = 0
        self.positional: list[list[str]] = []
        self.errors: list[list[str]] = []

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.errors.append([report.nodeid, str(report.longrepr)])

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        parametrised = [item for item in items if hasattr(item, "callspec")]
        self.checked = len(parametrised)
        self.positional = [
            [item.nodeid, why]
            for item in parametrised
            for why in positional_parts(item.callspec.id, item.callspec.indices, item.callspec.params)
        ]

    def pytest_sessionfinish(self) -> None:
        path = os.environ.get(REPORT)
        if path:
            report = {"checked": self.checked, "positional": self.positional, "errors": self.errors}
            with open(path, "w", encoding="utf-8") as file:
                json.dump(report, file, indent=1)


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(Guard(), "param_id_guard_state")
