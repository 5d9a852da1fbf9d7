"""TorchX against native PyTorch, side by side in one process, printed as ratios.

    python benchmarks/run.py            # everything (a few minutes on 2 cores)
    python benchmarks/run.py --quick    # fewer repetitions, for a smoke run
    python benchmarks/run.py --only forward,build

Every figure is a median over many interleaved repetitions (TorchX and native
alternate, so drift affects both), on one thread. Ratios are TorchX / native:
1.00 means "costs what native PyTorch costs".
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

import torch
from _timing import Result
from bench_compile import bench_compile
from bench_device import bench_device
from bench_examples import bench_examples
from bench_functional import bench_functional
from bench_keras import bench_keras
from bench_layers import (
    bench_abstract_build,
    bench_build,
    bench_construct,
    bench_first_build,
    bench_forward,
    bench_import,
    bench_layer_norm_2d,
)
from bench_rnn import bench_rnn
from bench_specs import bench_specs
from bench_transformers import bench_transformers
from bench_tune import bench_tune
from bench_vision import bench_vision
from bench_weights import bench_weights

import torchx

BENCHMARKS: dict[str, Callable[[bool], list[Result]]] = {
    "forward": bench_forward,
    "build": bench_build,
    "construct": bench_construct,
    "abstract": bench_abstract_build,
    "import": bench_import,
    "first": bench_first_build,
    "layernorm2d": bench_layer_norm_2d,
    "functional": bench_functional,
    "vision": bench_vision,
    "weights": bench_weights,
    "rnn": bench_rnn,
    "device": bench_device,
    "examples": bench_examples,
    "keras": bench_keras,
    "specs": bench_specs,
    "compile": bench_compile,
    "transformers": bench_transformers,
    "tune": bench_tune,
}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--only", default=",".join(BENCHMARKS), help="comma-separated subset")
    parser.add_argument("--check", action="store_true", help="exit 1 when a ratio is over its bound")
    options = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    print(
        f"torch {torch.__version__}, torchx {torchx.__version__}, 1 thread, python {sys.version.split()[0]}"
    )
    over = 0
    for name in options.only.split(","):
        for result in BENCHMARKS[name](options.quick):
            print(result.line(), flush=True)
            over += result.bound is not None and result.ratio > result.bound
    return 1 if options.check and over else 0


if __name__ == "__main__":
    raise SystemExit(main())
