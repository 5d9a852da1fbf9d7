"""Reading specs: the time to read a spec file and build its model grows with the spec.

- An ``L.Sequential`` of 1,000 and 2,000 layers, read (``torchx.load_spec`` of a
  JSON file) and built: the ratio should be about 2.
- Functionals nested 6 and 12 deep, each calling the one inside twice (a spec
  of a few KB whose forward runs its Linear 2**depth times): reading, which
  builds, costs what the spec holds, so 12 levels take about twice what 6 take
  (working out each call's shapes by running the nested forwards made it 2**6).
"""

from __future__ import annotations

import gc
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _timing import Result
from torch import nn

import torchx
import torchx.layers as L


def _sequential(layers: int) -> L.Sequential:
    """``layers`` layers: Linear(16) and ReLU in turn."""
    return L.Sequential(*(L.Linear(16) if index % 2 == 0 else L.ReLU() for index in range(layers)))


def _nested_twice(depth: int) -> L.Functional:
    x = L.Placeholder((None, 4))
    model = L.Functional(inputs=x, outputs=L.Linear(4)(x))
    for _ in range(depth):
        x = L.Placeholder((None, 4))
        model = L.Functional(inputs=x, outputs=model(model(x)))
    return model


def _read_and_build(path: Path, width: int) -> float:
    """Seconds to read ``path`` and build its model for ``(None, width)`` inputs."""
    gc.collect()
    start = time.perf_counter()
    torchx.build(torchx.load_spec(path), (None, width))
    return time.perf_counter() - start


def _growth(
    label: str,
    make: Callable[[int], nn.Module],
    sizes: tuple[int, int],
    width: int,
    rounds: int,
    folder: Path,
) -> tuple[float, float]:
    """Median read-and-build times of the specs of ``make(size)`` for both sizes,
    read in turn after a warm-up read, printed with the files' sizes."""
    paths = [folder / f"{label}_{size}.json" for size in sizes]
    for size, path in zip(sizes, paths, strict=True):
        torchx.save_spec(make(size), path)
    _read_and_build(paths[0], width)
    runs: list[list[float]] = [[], []]
    for _ in range(rounds):
        for index, path in enumerate(paths):
            runs[index].append(_read_and_build(path, width))
    small, large = (statistics.median(times) for times in runs)
    for size, path, seconds in zip(sizes, paths, (small, large), strict=True):
        print(f"specs: read+build {label} {size}: {seconds * 1e3:8.1f} ms ({path.stat().st_size:,} bytes)")
    return small, large


def bench_specs(quick: bool) -> list[Result]:
    try:
        import torchx.functional  # noqa: F401
    except ImportError:
        print("specs: torchx-functional is not installed; skipped")
        return []
    rounds = 1 if quick else 2
    with tempfile.TemporaryDirectory() as folder:
        small, large = _growth("sequential", _sequential, (1000, 2000), 16, rounds, Path(folder))
        shallow, deep = _growth("nested_twice", _nested_twice, (6, 12), 4, 3 * rounds, Path(folder))
    return [
        Result("specs: read+build growth 2000 / 1000 layers", large, small, 2.3),
        Result("specs: nested twice, read growth depth 12 / 6", deep, shallow, 2.5),
    ]
