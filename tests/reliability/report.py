"""Counts of what the reliability suite exercised, for its end-of-run report.

Tests take the ``report`` fixture and count what they exercise::

    report.count("fuzz", "random spec documents")
"""

from __future__ import annotations

from collections import Counter

SECTIONS = {
    "fuzz": "fuzzed cases run, per property",
    "fault": "faults injected and survived",
    "thread": "thread-safety cases (threads x calls, all checked)",
    "attack": "hand-crafted model files converted exactly or refused after bounded work",
}


class Report:
    """Counts of cases, by section and name."""

    def __init__(self) -> None:
        self.counts: dict[str, Counter[str]] = {section: Counter() for section in SECTIONS}

    def count(self, section: str, name: str, cases: int = 1) -> None:
        self.counts[section][name] += cases


REPORT = Report()
"""The one report of this run."""
