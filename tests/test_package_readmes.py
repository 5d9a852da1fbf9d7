"""Each distribution's README (its page on the package index) says what it is,
how to install it, shows a short example that runs, and where the docs are.

The examples run here as a user runs them: in a fresh empty folder, in one
namespace per README; torchx-keras's reads ``digits.keras``, which Keras makes
first (its test extra), and torchx-tune's reads ``space.yaml``, the README's
YAML block.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
DISTRIBUTIONS = sorted(
    path.name for path in (ROOT / "packages").iterdir() if (path / "pyproject.toml").exists()
)
_BLOCK = re.compile(r"```(?P<language>\w+)\n(?P<code>.*?)```", re.DOTALL)
MAX_EXAMPLE_LINES = 5
"""Lines of an example beyond its imports."""


def readme(distribution: str) -> str:
    return (ROOT / "packages" / distribution / "README.md").read_text(encoding="utf-8")


def blocks(text: str, language: str) -> list[str]:
    return [m.group("code") for m in _BLOCK.finditer(text) if m.group("language") == language]


def test_every_distribution_is_here() -> None:
    assert DISTRIBUTIONS == [
        "torchx-core",
        "torchx-device",
        "torchx-functional",
        "torchx-keras",
        "torchx-layers",
        "torchx-rnn",
        "torchx-tune",
    ]


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_a_readme_says_what_how_and_where(distribution: str) -> None:
    text = readme(distribution)
    assert text.startswith(f"# {distribution}\n\n")
    assert any(f"pip install {distribution} " in code for code in blocks(text, "bash")), "no install line"
    assert (ROOT / "docs" / f"{distribution}.md").exists()
    assert f"`docs/{distribution}.md` in the TorchX repository" in text
    [example] = blocks(text, "python")
    code = [
        line for line in example.splitlines() if line.strip() and not line.startswith(("import ", "from "))
    ]
    assert 0 < len(code) <= MAX_EXAMPLE_LINES, example


def make_digits_keras() -> None:
    """The model of torchx-keras's README, saved by Keras as ``digits.keras``."""
    os.environ.setdefault("KERAS_BACKEND", "torch")
    keras = pytest.importorskip(
        "keras", reason="needs Keras 3: pip install keras (in torchx-keras's test extra)"
    )
    inputs = keras.Input((28, 28, 1))
    x = keras.layers.Conv2D(8, 3, activation="relu")(inputs)
    x = keras.layers.MaxPooling2D()(x)
    x = keras.layers.Flatten()(x)
    outputs = keras.layers.Dense(10, activation="softmax")(x)
    keras.Model(inputs, outputs, name="digits").save("digits.keras")


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_a_readme_example_runs(distribution: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = "torchx." + distribution.removeprefix("torchx-")
    pytest.importorskip(module, reason=f"{distribution} is not installed; run: pip install {distribution}")
    monkeypatch.chdir(tmp_path)
    text = readme(distribution)
    if distribution == "torchx-keras":
        make_digits_keras()
    if distribution == "torchx-tune":
        [space] = blocks(text, "yaml")
        Path("space.yaml").write_text(space, encoding="utf-8")
    [example] = blocks(text, "python")
    namespace: dict[str, Any] = {"__name__": f"readme_{distribution.replace('-', '_')}"}
    exec(compile(example, f"packages/{distribution}/README.md", "exec"), namespace)
