"""Install the torch of one end of the range CI proves, with the distributions
whose suites run on it (tox's ``torch-oldest`` and ``torch-newest`` envs).

    python tools/torch_range.py oldest FOLDER   # torch==<the floor of torchx-core's torch>=>
    python tools/torch_range.py newest FOLDER   # the newest torch the index serves

Every other pin of ``constraints.txt`` holds (a copy without its torch line is
written to FOLDER); the oldest is read off the metadata, so the env proves
exactly what the distributions declare. The newest env sets
``PIP_CONFIG_FILE=/dev/null`` (tox.ini): a machine's pip configuration may cap
torch below the newest release.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DISTRIBUTIONS = (
    "packages/torchx-core[test]",
    "packages/torchx-layers[test]",
    "packages/torchx-functional[test]",
)
"""What the two envs test: the core, layers and functional suites."""

_TORCH_FLOOR = re.compile(r'"torch>=([0-9][0-9.]*)"')


def torch_floor() -> str:
    """The release ``torch>=`` names in torchx-core's dependencies (the only distribution that names torch)."""
    text = (ROOT / "packages" / "torchx-core" / "pyproject.toml").read_text(encoding="utf-8")
    found = _TORCH_FLOOR.findall(text)
    if len(found) != 1:
        raise SystemExit(f"torchx-core's pyproject.toml should name torch>= once, found {found}")
    floor: str = found[0]
    return floor


def constraints_without_torch(folder: Path) -> Path:
    """A copy of constraints.txt without its torch pin, in ``folder``."""
    lines = (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines()
    kept = [line for line in lines if not re.match(r"\s*torch\s*(==|$)", line)]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "constraints-without-torch.txt"
    path.write_text("\n".join(kept) + "\n", encoding="utf-8")
    return path


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("oldest", "newest"):
        print(__doc__, file=sys.stderr)
        return 2
    end, folder = argv[0], Path(argv[1])
    torch = f"torch=={torch_floor()}" if end == "oldest" else "torch"
    command = [
        sys.executable, "-m", "pip", "install", "-q", "--upgrade",
        "-c", str(constraints_without_torch(folder)),
        torch, *(str(ROOT / distribution) for distribution in DISTRIBUTIONS),
    ]  # fmt: skip
    print(f"torch_range: {end}: {torch}", flush=True)
    # the constraints above replace any of the environment's (tox's PIP_CONSTRAINT pins torch)
    environment = {name: value for name, value in os.environ.items() if name != "PIP_CONSTRAINT"}
    done = subprocess.run(command, env=environment, check=False)
    if done.returncode == 0:
        subprocess.run(
            [sys.executable, "-c", "import torch; print('torch_range: installed torch', torch.__version__)"]
        )
    return done.returncode


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
