"""Hypothesis profiles, and the report printed at the end of the run: how many
cases each property, fault and thread test ran (see report.py)."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings
from report import REPORT, SECTIONS, Report

_COMMON = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}
settings.register_profile("dev", **_COMMON)
# The same cases on every CI run; locally, new ones each run.
settings.register_profile("ci", derandomize=True, database=None, **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))  # tox's reliability env: ci


@pytest.fixture(scope="session")
def report() -> Report:
    return REPORT


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not any(REPORT.counts.values()):
        return
    write = terminalreporter.write_line
    terminalreporter.section("TorchX reliability report")
    for section, title in SECTIONS.items():
        counts = REPORT.counts[section]
        write(f"{title}: {sum(counts.values())}")
        for name, cases in sorted(counts.items()):
            write(f"  {cases:>7,}  {name}")
