"""torchx.device: the standard device ids, DataParallel and DistributedDataParallel.

Installing torchx-device makes ``torchx.device_scope`` accept the standard
ids (see :data:`FORMS`) and provides ``torchx.DataParallel`` and
``torchx.DistributedDataParallel``. It registers through the
``torchx.plugins`` entry point like any device backend; a third party adds
other ids (``"mps"``, ``"xpu:0"``, its own) through the same
``torchx_resolve_device`` hook.
"""

from torchx.core import Placement as Placement
from torchx.device._data_parallel import DataParallel as DataParallel
from torchx.device._distributed import DistributedDataParallel as DistributedDataParallel
from torchx.device._distributed import destroy_distributed as destroy_distributed
from torchx.device._distributed import init_distributed as init_distributed
from torchx.device._distributed import launched_by_torchrun as launched_by_torchrun
from torchx.device._distributed import local_device as local_device
from torchx.device._inventory import available_devices as available_devices
from torchx.device._parse import FORMS as FORMS
from torchx.device._parse import parse as parse
from torchx.device._version import __version__ as __version__

__all__ = [
    "FORMS",
    "DataParallel",
    "DistributedDataParallel",
    "Placement",
    "__version__",
    "available_devices",
    "destroy_distributed",
    "init_distributed",
    "launched_by_torchrun",
    "local_device",
    "parse",
]
