"""torchx-rnn as a TorchX plugin: recurrent layers and TimeDistributed on the façade and in specs."""

from __future__ import annotations

from torchx.core import LayerRegistry, hookimpl
from torchx.rnn._recurrent import GRU, LSTM, RNN, GetRNNOutput, GetRNNState, GRUCell, LSTMCell, RNNCell
from torchx.rnn._time_distributed import TimeDistributed


@hookimpl(tryfirst=True)  # TorchX's own names: registered first, never taken by a third party
def torchx_register_layers(registry: LayerRegistry) -> None:
    for cls in (RNN, LSTM, GRU, RNNCell, LSTMCell, GRUCell, GetRNNOutput, GetRNNState, TimeDistributed):
        registry.register(cls)
