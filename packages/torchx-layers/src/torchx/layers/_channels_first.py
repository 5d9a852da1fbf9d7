"""The family base of layers over ``(N, C, *spatial)`` input whose channel count is
one constructor argument: convolutions (``in_channels``) and batch and
instance norms (``num_features``)."""

from __future__ import annotations

from typing import Any, ClassVar

from torchx.core import FromInput, FromState, LeafLayer

__all__ = ["ChannelsFirst"]

_SPATIAL_NAMES = ("D", "H", "W")


class ChannelsFirst(LeafLayer):
    """A layer whose ``channels_argument`` is dim 1 of its ``(N, C, *spatial)`` input.

    A family declares what its members share (``channels_argument``,
    ``channels_state``, ``channels_name``); each member only its native class
    and ``spatial_dims`` (``2`` for ``(N, C, H, W)``; a tuple for members that
    take several ranks, ``(0, 1)`` for ``(N, C)`` or ``(N, C, L)``), from which
    ``inferred_arguments`` and ``input_layout`` follow.
    """

    spatial_dims: ClassVar[int | tuple[int, ...]]
    channels_argument: ClassVar[str]
    channels_state: ClassVar[FromState]
    """Where a state dict shows the channel count (for loading into an unbuilt layer)."""
    channels_name: ClassVar[str] = "C"
    """How the input layout names the channel dim (``C_in`` for convolutions)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        if "spatial_dims" in cls.__dict__:
            dims = cls.spatial_dims if isinstance(cls.spatial_dims, tuple) else (cls.spatial_dims,)
            rule = FromInput(dim=1, ranks=tuple(count + 2 for count in dims), state=cls.channels_state)
            cls.inferred_arguments = {cls.channels_argument: rule}
            cls.input_layout = " or ".join(_layout(cls.channels_name, count) for count in dims)
        super().__init_subclass__(**kwargs)


def _layout(channels: str, spatial_dims: int) -> str:
    spatial = ["L"] if spatial_dims == 1 else list(_SPATIAL_NAMES[len(_SPATIAL_NAMES) - spatial_dims :])
    return "(" + ", ".join(["N", channels, *spatial]) + ")"
