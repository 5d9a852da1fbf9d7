"""``python -m torchx.cli``: the same as the ``torchx`` command."""

import sys

from torchx.cli import main

sys.exit(main())
