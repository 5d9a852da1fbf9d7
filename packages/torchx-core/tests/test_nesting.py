"""Which of torch's modules hold tensors in submodules: a layer of any other
skips measuring its layout at construction (its stand-in children would be none)."""

from __future__ import annotations

import inspect
import warnings

import pytest
from torch import nn

from torchx.core._leaf import _torch_holds_tensors_itself, takes_factory_kwargs
from torchx.core._pending import layout_of

_TRIED_ARGUMENTS = ((), (4,), (4, 4), (4, 4, 3), (4, 2), ([4, 4],), (4, [2]), (4, 8, [2]))


def _made(cls: type[nn.Module]) -> nn.Module | None:
    """``cls`` made with the first of a few plain argument lists it takes, or None."""
    for arguments in _TRIED_ARGUMENTS:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return cls(*arguments)
        except Exception:  # noqa: BLE001 - not these arguments: try the next
            continue
    return None


_MODULES = {
    name: value
    for name, value in vars(nn).items()
    if inspect.isclass(value) and issubclass(value, nn.Module) and not name.startswith("Lazy")
}


@pytest.mark.parametrize("cls", _MODULES.values(), ids=_MODULES.keys())
def test_a_torch_module_with_tensors_in_submodules_is_known_to_nest(cls: type[nn.Module]) -> None:
    module = _made(cls)
    if module is None:
        pytest.skip(f"{cls.__name__} takes none of the tried argument lists")
    nested = layout_of(module).nested
    assert not (nested and _torch_holds_tensors_itself(cls)), f"add {cls.__name__} to _TORCH_NESTING"


@pytest.mark.parametrize("cls", _MODULES.values(), ids=_MODULES.keys())
def test_a_torch_module_without_a_device_argument_is_known_to_hold_no_tensors(cls: type[nn.Module]) -> None:
    """What the memory check skips: a layer of it allocates nothing."""
    module = _made(cls)
    if module is None:
        pytest.skip(f"{cls.__name__} takes none of the tried argument lists")
    if _torch_holds_tensors_itself(cls, device_argument=False) and not takes_factory_kwargs(cls):
        assert not layout_of(module).slots


def test_a_subclass_with_its_own_constructor_is_not_taken_for_torch_s() -> None:
    class Gated(nn.Linear):
        def __init__(self) -> None:
            super().__init__(2, 2)
            self.gate = nn.Linear(2, 2)

    class Renamed(nn.Linear):
        """Torch's constructor, but defined here: measured like any third party's."""

    assert _torch_holds_tensors_itself(nn.Linear) and not _torch_holds_tensors_itself(nn.MultiheadAttention)
    assert not _torch_holds_tensors_itself(Gated) and not _torch_holds_tensors_itself(Renamed)
