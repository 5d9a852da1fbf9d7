"""``GRUResetBefore``: Keras's GRU with ``reset_after=False``, which torch has no module for.

Keras's original GRU applies the reset gate to the previous state *before*
the recurrent kernel, ``tanh(x W_h + (r * h) U_h + b_h)``; torch's
``nn.GRU`` (and Keras's default ``reset_after=True``) applies it after. The
native module here runs that recurrence with a loop over the time steps
(batch-first), its gates in Keras's order (update ``z``, reset ``r``,
candidate ``h``), with one bias as Keras has.
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from torchx.core import FromInput, FromState, LeafLayer
from torchx.plugin import PositiveInt

__all__ = ["GRUResetBefore", "GRUResetBeforeModule"]


class GRUResetBeforeModule(nn.Module):
    """A one-layer, batch-first GRU with the reset gate applied before the recurrent kernel.

    Parameters: ``weight_ih`` ``(3 * hidden, input)``, ``weight_hh``
    ``(3 * hidden, hidden)`` and (with ``bias``) ``bias`` ``(3 * hidden,)``,
    the gates stacked as Keras stacks them: ``z``, ``r``, ``h``. Returns the
    outputs of every step ``(batch, time, hidden)`` or of the last
    ``(batch, hidden)``; with ``return_state``, ``(output, h)`` with ``h``
    ``(1, batch, hidden)``, shaped as torch's recurrent layers return it.
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        return_sequences: bool = True,
        return_state: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.input_size, self.hidden_size = input_size, hidden_size
        self.return_sequences, self.return_state = return_sequences, return_state
        self.weight_ih = nn.Parameter(torch.empty(3 * hidden_size, input_size, **factory))
        self.weight_hh = nn.Parameter(torch.empty(3 * hidden_size, hidden_size, **factory))
        self.bias = nn.Parameter(torch.empty(3 * hidden_size, **factory)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Uniform in ``(-1/sqrt(hidden), 1/sqrt(hidden))``, as torch initialises its GRU."""
        bound = self.hidden_size**-0.5
        for parameter in self.parameters():
            nn.init.uniform_(parameter, -bound, bound)

    def forward(self, input: torch.Tensor) -> Any:
        projected = F.linear(input, self.weight_ih, self.bias)  # every step's input part at once
        x_z, x_r, x_h = projected.chunk(3, dim=-1)
        u_z, u_r, u_h = self.weight_hh.chunk(3, dim=0)
        hidden = input.new_zeros(input.shape[0], self.hidden_size)
        outputs = []
        for step in range(input.shape[1]):
            update = torch.sigmoid(x_z[:, step] + hidden @ u_z.T)
            reset = torch.sigmoid(x_r[:, step] + hidden @ u_r.T)
            candidate = torch.tanh(x_h[:, step] + (reset * hidden) @ u_h.T)
            hidden = update * hidden + (1 - update) * candidate
            outputs.append(hidden)
        output = torch.stack(outputs, dim=1) if self.return_sequences else hidden
        return (output, hidden.unsqueeze(0)) if self.return_state else output

    def extra_repr(self) -> str:
        return (
            f"{self.input_size}, {self.hidden_size}, bias={self.bias is not None}, "
            f"return_sequences={self.return_sequences}, return_state={self.return_state}"
        )


class GRUResetBefore(LeafLayer):
    """Keras's GRU with ``reset_after=False`` (reset gate before the recurrent kernel); batch-first.

    ``input_size`` is read off the last dim of the ``(batch, time, features)``
    input. See :class:`GRUResetBeforeModule` for the parameters and outputs.
    """

    native_class = GRUResetBeforeModule
    inferred_arguments: ClassVar = {
        "input_size": FromInput(dim=-1, ranks=(3,), state=FromState("weight_ih", 1))
    }
    input_layout = "(batch, time, features)"

    def __init__(
        self,
        hidden_size: PositiveInt,
        *,
        bias: bool = True,
        return_sequences: bool = True,
        return_state: bool = False,
        input_size: PositiveInt | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(
            hidden_size=hidden_size, bias=bias, return_sequences=return_sequences, return_state=return_state,
            input_size=input_size, device=device, dtype=dtype, name=name,
        )  # fmt: skip
