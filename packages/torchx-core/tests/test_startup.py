"""``import torchx`` imports nothing heavy (torch's compiler and sympy among
them: see ``tests/startup.py``), and what needs sympy imports it on use."""

from __future__ import annotations

from pathlib import Path

from startup import heavy_imports

TESTS = str(Path(__file__).parent)


def test_importing_torchx_imports_nothing_heavy() -> None:
    assert heavy_imports("import torchx\nimport torchx.core\nimport torchx.nn") == []


def test_a_summary_with_a_dynamic_sequence_imports_sympy_when_it_counts() -> None:
    code = (
        "import torch\nimport torchx\nfrom toy_layers import Dense\n"
        "print(torchx.summarize(Dense(4), (None, None, 8)).total_mult_adds)"
    )
    assert "sympy" in heavy_imports(f"import sys\nsys.path.insert(0, {TESTS!r})\n{code}")


def test_measuring_a_native_module_on_meta_imports_nothing_heavy() -> None:
    """The memory check measures a large layer's need by constructing it on
    meta, where an embedding's ``normal_`` fill would import torch's compiler."""
    code = (
        "import torch\nfrom torchx.core._memory import measured_need\n"
        "assert measured_need(torch.nn.Embedding, {'num_embeddings': 50257, 'embedding_dim': 768}, True) "
        "== 50257 * 768 * 4"
    )
    assert heavy_imports(code) == []
