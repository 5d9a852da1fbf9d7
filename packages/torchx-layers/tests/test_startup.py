"""``import torchx.layers`` and ``torchx --help`` with core and layers import
nothing heavy (torch's compiler and sympy among them), nor does making and
building every layer: see ``tests/startup.py``."""

from __future__ import annotations

from pathlib import Path

from startup import HELP, heavy_imports

TESTS = str(Path(__file__).parent)

_UNPOOLS = ("MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d")
_NATIVE_UNPOOL = (
    "import torch\ntorch.nn.MaxUnpool1d(2)(*torch.nn.MaxPool1d(2, return_indices=True)(torch.randn(1, 2, 4)))"
)


def test_importing_torchx_layers_imports_nothing_heavy() -> None:
    assert heavy_imports("import torchx.layers") == []


def test_the_torchx_command_loads_its_plugins_without_importing_anything_heavy() -> None:
    assert heavy_imports(HELP) == []


def test_making_and_building_every_layer_imports_nothing_heavy() -> None:
    """Each layer measures its native module's parameters on meta at
    construction, where torch's ``nn.init`` fills (``normal_`` of an
    Embedding's table) would import its compiler: a second of a fresh
    process. The unpooling layers are left out where torch's own
    ``F.max_unpool`` imports sympy as it runs (torch 2.13: its ``torch._check``)."""
    left_out = _UNPOOLS if heavy_imports(_NATIVE_UNPOOL) else ()
    code = (
        f"import sys\nsys.path.insert(0, {TESTS!r})\nfrom layer_cases import CASES\n"
        f"for case in CASES:\n"
        f"    if type(case.native()).__name__ not in {left_out!r}:\n"
        f"        case.layer()(*case.inputs())\n"
    )
    assert heavy_imports(code) == []


def test_building_on_meta_fills_nothing() -> None:
    """A build on the meta device runs the native constructor there, without its fills."""
    code = (
        "import torch, torchx, torchx.layers as L\n"
        "model = L.Sequential(L.Embedding(10, 4), L.Flatten(), L.Linear(3), L.Parameter((3,), init='trunc_normal'))\n"
        "torchx.build(model, torch.zeros(2, 5, dtype=torch.long), device='meta')\n"
        "assert model[0].weight.is_meta"
    )
    assert heavy_imports(code) == []
