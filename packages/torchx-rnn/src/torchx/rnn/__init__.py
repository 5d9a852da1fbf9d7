"""torchx.rnn: recurrent layers with inferred input size, and TimeDistributed.

On the façade too (``L.LSTM``, ``L.TimeDistributed``...) once torchx-rnn is installed.
"""

from torchx.rnn._recurrent import (
    GRU as GRU,
)
from torchx.rnn._recurrent import (
    LSTM as LSTM,
)
from torchx.rnn._recurrent import (
    RNN as RNN,
)
from torchx.rnn._recurrent import (
    GetRNNOutput as GetRNNOutput,
)
from torchx.rnn._recurrent import (
    GetRNNState as GetRNNState,
)
from torchx.rnn._recurrent import (
    GRUCell as GRUCell,
)
from torchx.rnn._recurrent import (
    LSTMCell as LSTMCell,
)
from torchx.rnn._recurrent import (
    RNNCell as RNNCell,
)
from torchx.rnn._time_distributed import TimeDistributed as TimeDistributed
from torchx.rnn._version import __version__ as __version__

__all__ = [
    "GRU",
    "LSTM",
    "RNN",
    "GRUCell",
    "GetRNNOutput",
    "GetRNNState",
    "LSTMCell",
    "RNNCell",
    "TimeDistributed",
    "__version__",
]
