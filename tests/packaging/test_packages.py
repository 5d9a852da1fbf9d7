"""What a user downloads from the package index: every distribution's sdist and
wheel, built here as a release builds them (``python -m build``: the sdist,
then the wheel from the sdist), checked by ``twine check --strict`` and read.

Each holds the MIT license (the repository's ``LICENSE``, copied into each
distribution's folder, since a build reads only that folder), names its
authors, Python versions, status and topics, carries its README as its
description, and the sdists leave the tests out: they use the repository's
shared helpers (``tests/``) and example files, so they run from a clone.

``tox -e packaging`` runs this with build, twine and hatchling, and no TorchX
distribution installed; there ``pytest packages/`` is collected too, each
suite skipping with the line that installs its distribution.
"""

from __future__ import annotations

import email.message
import email.parser
import importlib.util
import re
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DISTRIBUTIONS = sorted(
    path.name for path in (ROOT / "packages").iterdir() if (path / "pyproject.toml").exists()
)
LICENSE = (ROOT / "LICENSE").read_bytes()
PYTHONS = ["3.10", "3.11", "3.12", "3.13"]
"""The Python versions every distribution claims: from its requires-python floor to the newest torch supports that is claimed."""


@dataclass(frozen=True)
class Built:
    """A distribution's two artifacts."""

    sdist: Path
    wheel: Path


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Built]:
    """Every distribution built into a fresh folder, all at once."""
    pytest.importorskip("build", reason="needs build: pip install build (tox -e packaging installs it)")
    pytest.importorskip(
        "hatchling", reason="needs hatchling: pip install hatchling (tox -e packaging installs it)"
    )
    out = tmp_path_factory.mktemp("dist")
    # --no-isolation: the hatchling installed here, not one downloaded per build.
    runs = {
        name: subprocess.Popen(
            [
                sys.executable,
                "-m",
                "build",
                "--no-isolation",
                "--outdir",
                str(out / name),
                str(ROOT / "packages" / name),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for name in DISTRIBUTIONS
    }
    for name, run in runs.items():
        output, _ = run.communicate(timeout=600)
        assert run.returncode == 0, f"{name} does not build:\n{output[-3000:]}"
    return {
        name: Built(sdist=next((out / name).glob("*.tar.gz")), wheel=next((out / name).glob("*.whl")))
        for name in DISTRIBUTIONS
    }


def sdist_files(built: Built) -> dict[str, bytes]:
    """The sdist's files by their path below its top folder (``src/torchx/...``)."""
    with tarfile.open(built.sdist) as archive:
        return {
            member.name.partition("/")[2]: archive.extractfile(member).read()  # type: ignore[union-attr]
            for member in archive.getmembers()
            if member.isfile()
        }


def wheel_files(built: Built) -> dict[str, bytes]:
    with zipfile.ZipFile(built.wheel) as archive:
        return {name: archive.read(name) for name in archive.namelist() if not name.endswith("/")}


def metadata(text: bytes) -> email.message.Message:
    return email.parser.BytesParser().parsebytes(text)


def wheel_metadata(built: Built) -> email.message.Message:
    [found] = [data for name, data in wheel_files(built).items() if name.endswith(".dist-info/METADATA")]
    return metadata(found)


def test_the_repository_license_is_mit() -> None:
    text = LICENSE.decode()
    assert text.startswith("MIT License\n\nCopyright (c) 2026 TorchX contributors\n")
    assert 'THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND' in text


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_each_distribution_folder_holds_the_repository_license(distribution: str) -> None:
    assert (ROOT / "packages" / distribution / "LICENSE").read_bytes() == LICENSE


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_the_sdist_holds_the_license_and_the_code_and_no_tests(
    distribution: str, built: dict[str, Built]
) -> None:
    files = sdist_files(built[distribution])
    assert files["LICENSE"] == LICENSE
    assert {"pyproject.toml", "README.md", "PKG-INFO"} <= set(files)
    assert any(name.startswith("src/torchx/") and name.endswith(".py") for name in files)
    assert [name for name in files if name.startswith("tests/") or "/tests/" in name] == []
    assert metadata(files["PKG-INFO"])["License-File"] == "LICENSE"


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_the_wheel_holds_the_license_and_only_the_package(distribution: str, built: dict[str, Built]) -> None:
    files = wheel_files(built[distribution])
    info = f"{distribution.replace('-', '_')}-"
    [license_file] = [
        name for name in files if name.startswith(info) and name.endswith(".dist-info/licenses/LICENSE")
    ]
    assert files[license_file] == LICENSE
    assert [name for name in files if not name.startswith(("torchx/", info))] == []
    assert [name for name in files if "/tests/" in name] == []


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_the_metadata_names_license_authors_pythons_status_and_topics(
    distribution: str, built: dict[str, Built]
) -> None:
    found = wheel_metadata(built[distribution])
    assert found["Name"] == distribution
    assert found["License-Expression"] == "MIT"
    assert found["License-File"] == "LICENSE"
    assert found["Author"] == "TorchX contributors"
    classifiers: list[str] = found.get_all("Classifier") or []
    # PEP 639: a License-Expression replaces the license classifiers (tools refuse both).
    assert [c for c in classifiers if c.startswith("License ::")] == []
    floor = re.fullmatch(r">=(3\.\d+)", found["Requires-Python"])
    assert floor is not None and floor.group(1) == PYTHONS[0], found["Requires-Python"]
    pythons = [
        c.rpartition(" :: ")[2]
        for c in classifiers
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    ]
    assert pythons == PYTHONS
    for wanted in ("Development Status :: ", "Topic :: ", "Intended Audience :: "):
        assert any(c.startswith(wanted) for c in classifiers), wanted
    assert "Typing :: Typed" in classifiers
    assert "Programming Language :: Python :: 3 :: Only" in classifiers


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_the_description_is_the_readme_with_install_line_and_docs(
    distribution: str, built: dict[str, Built]
) -> None:
    found = wheel_metadata(built[distribution])
    readme = (ROOT / "packages" / distribution / "README.md").read_text(encoding="utf-8")
    assert found["Description-Content-Type"] == "text/markdown"
    description = found.get_payload(decode=True)
    assert isinstance(description, bytes)
    assert description.decode("utf-8").strip() == readme.strip()
    assert f"pip install {distribution} " in readme
    assert "```python\n" in readme
    assert f"`docs/{distribution}.md` in the TorchX repository" in readme
    assert (ROOT / "docs" / f"{distribution}.md").exists()


def test_twine_check_passes(built: dict[str, Built]) -> None:
    pytest.importorskip("twine", reason="needs twine: pip install twine (tox -e packaging installs it)")
    artifacts = [str(path) for pair in built.values() for path in (pair.sdist, pair.wheel)]
    done = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *artifacts],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.stdout.count("PASSED") == 2 * len(DISTRIBUTIONS)


def test_pytest_packages_collects_where_no_distribution_is_installed() -> None:
    if importlib.util.find_spec("torchx") is not None:
        pytest.skip(
            "needs an environment without TorchX (tox -e packaging); tests/test_distribution_skips.py plays it"
        )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "packages/"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    no_tests_collected = 5  # every test module skipped
    assert done.returncode == no_tests_collected, done.stdout[-3000:] + done.stderr[-3000:]
    assert "ERROR" not in done.stdout
    for distribution in DISTRIBUTIONS:
        assert f"{distribution} is not installed; run: pip install {distribution}" in done.stdout, (
            distribution
        )
