"""Parametrised test ids name their cases, so an id stays the same when other
cases are edited, added or removed.

pytest's ids for values it cannot print are the argument and the case's index
(``spec3``), and ids that repeat get a counter (``<lambda>0``): both shift
when a list changes, which breaks ``pytest "...[id]"``, -k selections and
comparisons of runs. ``case_ids.case_id`` and ``pytest.param(..., id=...)``
name cases instead. This collects every suite (no test runs) with the
``param_id_guard`` plugin and pytest's strict_parametrization_ids.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from param_id_guard import REPORT, positional_parts

ROOT = Path(__file__).resolve().parents[1]
SUITES = [*sorted(ROOT.glob("packages/*/tests")), *sorted(ROOT.glob("examples/*/tests")), ROOT / "tests"]


def collect(tmp_path: Path, *paths: Path, cwd: Path = ROOT) -> dict:
    """Collect ``paths`` in a fresh pytest with the guard: its report."""
    report = tmp_path / "ids.json"
    env = {**os.environ, REPORT: str(report)}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "tests"), env.get("PYTHONPATH")]))
    strict = ["-o", "strict_parametrization_ids=true"] if pytest.version_tuple >= (9,) else []
    command = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "param_id_guard", *strict]
    done = subprocess.run(
        [*command, *map(str, paths)], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )
    assert report.exists(), f"the guard plugin wrote no report:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    return json.loads(report.read_text(encoding="utf-8"))


def not_installed(error: str) -> bool:
    """Whether a collection error is an import of a distribution this
    environment lacks (tox's examples env has no hypothesis, say)."""
    missing = re.search(r"ModuleNotFoundError: No module named '([\w.]+)'", error)
    return missing is not None and importlib.util.find_spec(missing.group(1).split(".")[0]) is None


def test_no_test_id_depends_on_its_position(tmp_path: Path) -> None:
    report = collect(tmp_path, *SUITES)
    assert report["checked"] > 500, report  # the plugin saw the parametrised tests
    positional = [f"{node}: {why}" for node, why in report["positional"]]
    errors = [f"{node}:\n{text}" for node, text in report["errors"] if not not_installed(text)]
    problems = []
    if positional:
        problems.append(
            "ids that name a position, not a case (name it: case_ids.case_id or pytest.param(..., id=...)):\n"
            + "\n".join(positional)
        )
    if errors:
        problems.append("not collected (a repeated id, say), so unchecked:\n" + "\n\n".join(errors))
    assert not problems, "\n\n".join(problems)


@pytest.mark.parametrize(
    ("test_id", "indices", "params", "found"),
    [
        pytest.param("spec3", {"spec": 3}, {"spec": {}}, ["spec3"], id="default"),
        pytest.param(
            "Linear-arguments1", {"native": 1, "arguments": 1}, {}, ["arguments1"], id="default-beside"
        ),
        pytest.param("case2", {"x": 2}, {"x": []}, ["case2"], id="numbered"),
        pytest.param("4", {"x": 4}, {"x": (1, 2)}, ["4"], id="index"),
        pytest.param("4", {"x": 4}, {"x": 4}, [], id="int-value"),
        pytest.param("0-cuda:0", {"a": 0, "b": 0}, {"a": 0, "b": "cuda:0"}, [], id="values"),
        pytest.param("shape1", {"shape": 1}, {"shape": "shape1"}, [], id="value-like-default"),
        pytest.param("(2,4)-float64", {"shape": 1, "dtype": 1}, {}, [], id="named"),
    ],
)
def test_what_counts_as_a_position(
    test_id: str, indices: dict[str, int], params: dict[str, object], found: list[str]
) -> None:
    assert [why.split(":")[0] for why in positional_parts(test_id, indices, params)] == found


def test_only_a_missing_distribution_excuses_a_file() -> None:
    assert not_installed("E   ModuleNotFoundError: No module named 'no_such_distribution.sub'")
    assert not not_installed("E   ModuleNotFoundError: No module named 'torch.no_such_module'")
    assert not not_installed("E   SyntaxError: invalid syntax")


def test_the_guard_finds_default_and_repeated_ids(tmp_path: Path) -> None:
    (tmp_path / "test_default.py").write_text(
        "import pytest\n"
        "@pytest.mark.parametrize('shape', [(1, 2), (3,)])\n"
        "def test_default(shape): pass\n"
        "@pytest.mark.parametrize('shape', [(1, 2)], ids=lambda shape: 'x'.join(map(str, shape)))\n"
        "def test_named(shape): pass\n",
        encoding="utf-8",
    )
    (tmp_path / "test_repeated.py").write_text(
        "import pytest\n"
        "@pytest.mark.parametrize('make', [lambda: 1, lambda: 2])\n"
        "def test_repeated(make): pass\n",
        encoding="utf-8",
    )
    report = collect(tmp_path, tmp_path, cwd=tmp_path)
    assert report["checked"] == (3 if pytest.version_tuple >= (9,) else 5)
    assert [node.split("::")[1] for node, _ in report["positional"]] == [
        "test_default[shape0]",
        "test_default[shape1]",
    ]
    if pytest.version_tuple >= (9,):  # pytest reports repeats itself, strictly
        [(node, error)] = report["errors"]
        assert node.endswith("test_repeated.py") and "Duplicate parametrization IDs" in error
