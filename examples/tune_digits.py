"""Search the digits CNN's architecture (examples/digits_space.yaml) under a parameter budget.

    python examples/tune_digits.py                    # 20 trials, 3 epochs each: about a minute on 2 cores
    python examples/tune_digits.py --trials 50 --storage sqlite:///digits.db   # resumable, shareable

Each candidate is checked for free first (built on the meta device: one over
--max-params is pruned untrained), then :func:`objective` trains it for a few
epochs on the training part of train_digits.py's split, reports the
validation accuracy after each epoch (Optuna's pruner stops a poor one
early) and saves its weights. At the end the best spec and its weights are
read back from files and must score the validation accuracy the search
reported. The same objective serves the command line:

    torchx tune examples/digits_space.yaml --objective examples/tune_digits.py:objective \\
        --input None,1,8,8 --trials 20 --direction maximize --max-params 100000 \\
        -o best.yaml --weights best.safetensors
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

import optuna
import torch
from train_digits import accuracy, load_data

import torchx
import torchx.core
import torchx.tune

HERE = Path(__file__).resolve().parent
INPUT = (None, 1, 8, 8)
EPOCHS = 3
BATCH_SIZE = 64


@functools.cache
def splits() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """train_digits.py's training images split again, 80/20 with a fixed seed: (x_train, y_train,
    x_validation, y_validation). Its held-out images stay unseen by the search."""
    x, y, _, _ = load_data()
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(0))
    validation, train = order[: len(x) // 5], order[len(x) // 5 :]
    return x[train], y[train], x[validation], y[validation]


def objective(model: torch.nn.Module, trial: optuna.Trial, epochs: int = EPOCHS) -> float:
    """Train the built candidate for ``epochs`` epochs; its validation accuracy (to maximize)."""
    x_train, y_train, x_validation, y_validation = splits()
    torch.manual_seed(trial.number)  # the batches' order: a trial trains the same way when run again
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)
    loss_function = torch.nn.CrossEntropyLoss()
    score = 0.0
    for epoch in range(epochs):
        model.train()
        for batch in torch.randperm(len(x_train)).split(BATCH_SIZE):
            loss = loss_function(model(x_train[batch]), y_train[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        score = accuracy(model, x_validation, y_validation)
        trial.report(score, epoch)
        if trial.should_prune():
            raise optuna.TrialPruned(f"validation accuracy {score:.4f} after epoch {epoch + 1}")
    torchx.tune.save_weights(trial, model)
    return score


def best_weights(study: optuna.Study) -> Path:
    """The checkpoint of the study's best trial: its own, or that of the trial whose training it reused."""
    best = study.best_trial
    trained = study.trials[best.user_attrs.get("reused_from", best.number)]
    return Path(trained.user_attrs["weights"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("space", nargs="?", default=str(HERE / "digits_space.yaml"))
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--epochs", type=int, default=EPOCHS)
    parser.add_argument("--max-params", type=float, default=100_000, help="the parameter budget")
    parser.add_argument(
        "--storage", help="an SQLAlchemy URL, such as sqlite:///digits.db (default: in memory)"
    )
    parser.add_argument("--study", default="digits")
    parser.add_argument("-o", "--output", default="best_digits.yaml", help="where to write the best spec")
    options = parser.parse_args(argv)

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    torch.manual_seed(0)  # the candidates' initial weights: with the sampler's seed, a run is repeatable
    result = torchx.tune.search(
        torchx.tune.load_space(options.space),
        functools.partial(objective, epochs=options.epochs),
        input=INPUT,
        n_trials=options.trials,
        storage=options.storage,
        study=options.study,
        constraints=torchx.tune.Constraints(max_params=options.max_params),
        sampler=optuna.samplers.TPESampler(seed=0),
        direction="maximize",
    )
    study, best, spec = result.study, result.best_trial, result.best_spec
    states = [trial.state.name for trial in study.trials]
    print(
        f"{len(states)} trials: " + ", ".join(f"{states.count(s)} {s.lower()}" for s in sorted(set(states)))
    )
    for trial in study.trials:
        why = trial.user_attrs.get("pruned_reason") or trial.user_attrs.get("error") or ""
        shown = "-" if trial.value is None else f"{trial.value:.4f}"
        params = trial.user_attrs.get("params")
        size = "?" if params is None else f"{params:,}"
        print(f"  trial {trial.number:2d} {trial.state.name:8s} {shown:>6s} {size:>7s} parameters {why}")
    if best is None or spec is None:
        print("no trial completed", file=sys.stderr)
        return 1
    print(f"best: trial {best.number}, validation accuracy {best.value:.4f}, {best.params}")

    torchx.save_spec(torchx.core.from_spec(spec), options.output)
    weights = best_weights(study)
    from_checkpoint = torchx.load_model(weights)  # the spec and weights the checkpoint holds
    from_spec = torchx.build(torchx.load_spec(options.output), INPUT).load(weights)  # the written spec
    _, _, x_validation, y_validation = splits()
    again = [accuracy(model, x_validation, y_validation) for model in (from_checkpoint, from_spec)]
    _, _, x_test, y_test = load_data()
    print(
        f"reloaded from {options.output} and {weights}: validation accuracy {again[0]:.4f}, "
        f"held-out accuracy {accuracy(from_checkpoint, x_test, y_test):.4f}"
    )
    if any(abs(score - best.value) > 1e-6 for score in again):
        print(f"the reloaded model scores {again}, not {best.value}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
