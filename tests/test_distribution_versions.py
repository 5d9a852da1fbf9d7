"""Each distribution declares the range of its TorchX siblings it works with
(see the comment above ``dependencies`` in packages/*/pyproject.toml): a
bounded range that holds the siblings' versions in this tree, so the local
installs tox makes satisfy it."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, as a package
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]
PROJECTS = {
    path.parent.name: path
    for path in [
        *ROOT.glob("packages/*/pyproject.toml"),
        ROOT / "examples/torchx-plugin-example/pyproject.toml",
    ]
}


def version_of(distribution: str) -> Version:
    """The version hatch reads from the distribution's ``_version.py``."""
    project = tomllib.loads(PROJECTS[distribution].read_text(encoding="utf-8"))
    if "version" in project["project"]:
        return Version(project["project"]["version"])
    path = PROJECTS[distribution].parent / project["tool"]["hatch"]["version"]["path"]
    found = re.search(r'__version__ = "([^"]+)"', path.read_text(encoding="utf-8"))
    assert found is not None, path
    return Version(found.group(1))


def sibling_requirements(distribution: str) -> list[Requirement]:
    """What ``distribution`` requires of the other local distributions, its extras' requirements too."""
    project = tomllib.loads(PROJECTS[distribution].read_text(encoding="utf-8"))["project"]
    extras = project.get("optional-dependencies", {}).values()
    every = [*project.get("dependencies", []), *(line for extra in extras for line in extra)]
    requirements = [Requirement(line) for line in every]
    return [requirement for requirement in requirements if requirement.name in PROJECTS]


@pytest.mark.parametrize("distribution", sorted(PROJECTS), ids=sorted(PROJECTS))
def test_siblings_are_required_in_a_bounded_range_that_holds_their_versions_here(distribution: str) -> None:
    for requirement in sibling_requirements(distribution):
        operators = {specifier.operator for specifier in requirement.specifier}
        assert "<" in operators and ">=" in operators, f"{distribution}: {requirement} is not a bounded range"
        assert version_of(requirement.name) in requirement.specifier, (
            f"{distribution}: {requirement} excludes {requirement.name} {version_of(requirement.name)} in this tree"
        )


def test_every_distribution_but_core_requires_core() -> None:
    for distribution in PROJECTS:
        names = {requirement.name for requirement in sibling_requirements(distribution)}
        assert distribution == "torchx-core" or "torchx-core" in names, distribution
