"""A model's weights are never lost: not to a shape query running beside a
training thread, not to a checkpoint that fails half way, not to a save that
fails (full disk, size limit) after it began."""

from __future__ import annotations

import itertools
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from report import Report
from weights import small_model, snapshot, unchanged

import torchx
import torchx.layers as L
from torchx.core import CheckpointError

QUERIES = 300


QUERY_KINDS = {
    "infer_shapes": lambda model: torchx.infer_shapes(model, (None, 3, 8, 8)),
    "summarize": lambda model: torchx.summarize(model, (None, 3, 8, 8)),
}


@pytest.mark.parametrize("query", sorted(QUERY_KINDS))
def test_shape_queries_beside_forwards_and_saves_never_touch_the_weights(
    query: str, tmp_path: Path, report: Report
) -> None:
    model = small_model().eval()
    before = snapshot(model)
    x = torch.randn(2, 3, 8, 8)
    with torch.no_grad():
        expected = model(x)
    stop = threading.Event()
    problems: list[str] = []

    def ask() -> None:
        while not stop.is_set():
            QUERY_KINDS[query](model)

    asker = threading.Thread(target=ask)
    asker.start()
    try:
        for call in range(QUERIES):
            with torch.no_grad():
                out = model(x)
            if not torch.equal(out, expected):
                problems.append(f"forward {call} differs")
            if any(value.is_meta for value in model.state_dict().values()):
                problems.append(f"state_dict {call} holds meta tensors")
            if call % 30 == 0:
                path = tmp_path / f"saved-{call}.pt"
                model.save(path)
                copy = small_model()
                copy.load(path)
                if not unchanged(copy, before):
                    problems.append(f"checkpoint {call} lost weights")
    finally:
        stop.set()
        asker.join()
    assert problems == []
    assert unchanged(model, before)
    report.count("thread", f"forwards, state dicts and saves beside a looping {query}", QUERIES)


def test_a_summary_of_a_partly_built_model_copies_none_of_the_built_weights(report: Report) -> None:
    # A fresh process, so that its peak resident memory says what the summary allocated.
    script = """
import resource, torch, torchx, torchx.layers as L
from torch import nn
torchx.summarize(L.Sequential(nn.Linear(3, 4), L.ReLU(), L.Linear(2)), (None, 3))  # imports done
backbone = nn.Linear(4096, 8192)  # 128 MiB of float32 weights, touched
model = L.Sequential(backbone, L.ReLU(), L.Linear(10))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
summary = torchx.summarize(model, (None, 4096))
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
assert summary.total_parameters == 4096 * 8192 + 8192 + 8192 * 10 + 10, summary.total_parameters
assert not torchx.is_built(model[2])  # the model itself stays unbuilt
print((after - before) // 1024)
"""
    run = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True)
    grown_mib = int(run.stdout)
    assert grown_mib < 32, f"the summary grew the peak memory by {grown_mib} MiB (the backbone is 128 MiB)"
    report.count("fault", "summaries of a 128 MiB backbone with an unbuilt head (no copy)")


def _bad_state(kind: str) -> dict[str, object]:
    """A checkpoint whose state has one entry of the right shape and dtype that
    cannot be loaded, after three good ones (in state-dict order)."""
    state: dict[str, object] = dict(small_model().state_dict())
    name = list(state)[3]
    good = state[name]
    assert isinstance(good, torch.Tensor)
    if kind == "a meta tensor":
        state[name] = torch.empty_like(good, device="meta")
    elif kind == "a sparse tensor":
        state[name] = good.to_sparse()
    return state


BAD_ENTRIES = ["a meta tensor", "a sparse tensor", "a spec holding a tensor"]


@pytest.mark.parametrize("kind", BAD_ENTRIES)
def test_a_checkpoint_with_an_entry_that_cannot_load_changes_nothing(
    kind: str, tmp_path: Path, report: Report
) -> None:
    path = tmp_path / "bad.pt"
    good = small_model()
    good.save(path)
    data = torch.load(path, weights_only=True)
    if kind == "a spec holding a tensor":
        data["spec"]["layers"][0]["args"]["out_channels"] = torch.tensor(4)
    else:
        data["state_dict"] = _bad_state(kind)
    torch.save(data, path)
    model = small_model()
    before = snapshot(model)
    with pytest.raises(CheckpointError, match=str(path).replace(".", r"\.")):
        model.load(path)
    assert unchanged(model, before)
    report.count("fault", f"checkpoint entry that cannot load: {kind}")


def test_a_model_built_on_meta_takes_the_checkpoints_tensors(tmp_path: Path, report: Report) -> None:
    path = tmp_path / "model.pt"
    trained = small_model()
    trained.save(path)
    abstract = torchx.build(
        L.Sequential(L.Conv2d(4, 3), L.BatchNorm2d(), L.ReLU(), L.Flatten(), L.Linear(5)),
        (2, 3, 8, 8),
        device="meta",
    )
    with pytest.raises(CheckpointError, match="meta"):
        abstract.save(tmp_path / "nothing.pt")  # meta tensors have no values to save
    abstract.load(path)
    assert unchanged(abstract, snapshot(trained))
    x = torch.randn(2, 3, 8, 8)
    torch.testing.assert_close(abstract.eval()(x), trained.eval()(x))
    report.count("fault", "checkpoints loaded into models built on meta")


def _fail_after_half(monkeypatch: pytest.MonkeyPatch, error: BaseException) -> None:
    """torch.save writes half of its bytes, then fails with ``error``."""
    real_save = torch.save

    def save(data: object, file: object, *args: object, **kwargs: object) -> None:
        buffer = __import__("io").BytesIO()
        real_save(data, buffer)
        file.write(buffer.getvalue()[: len(buffer.getvalue()) // 2])  # type: ignore[attr-defined]
        raise error

    monkeypatch.setattr(torch, "save", save)


SAVE_FAULTS = {
    "a full disk": OSError(28, "No space left on device"),
    "an interrupt": KeyboardInterrupt(),
}


@pytest.mark.parametrize("fault", sorted(SAVE_FAULTS))
def test_a_failed_save_keeps_the_old_checkpoint(
    fault: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, report: Report
) -> None:
    path = tmp_path / "model.pt"
    old = small_model()
    old.save(path)
    new = small_model()
    with monkeypatch.context() as patch:
        _fail_after_half(patch, SAVE_FAULTS[fault])
        expected = KeyboardInterrupt if fault == "an interrupt" else CheckpointError
        with pytest.raises(expected):
            new.save(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.pt"]  # no temporary file left
    reloaded = small_model()
    reloaded.load(path)
    assert unchanged(reloaded, snapshot(old))
    report.count("fault", f"saves failing half way: {fault}")


@pytest.mark.parametrize("suffix", [".pt", ".safetensors"])
def test_a_save_past_the_file_size_limit_keeps_the_old_checkpoint(
    suffix: str, tmp_path: Path, report: Report
) -> None:
    # A real limit, in a child process: past it, write() fails with EFBIG (SIGXFSZ ignored),
    # in Python's writes (torch.save) and in Rust's (safetensors) alike.
    path = tmp_path / f"model{suffix}"
    script = f"""
import resource, signal, torch, torchx, torchx.layers as L
from torchx.core import CheckpointError
path = {str(path)!r}
torchx.build(L.Sequential(L.Linear(4)), (2, 3)).save(path)
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
try:
    torchx.build(L.Sequential(L.Linear(4096)), (2, 3)).save(path)
except CheckpointError as error:
    assert path in str(error), error
    print("refused")
"""
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "refused"
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]
    small = L.Sequential(L.Linear(4))
    small.load(path)  # the old checkpoint, whole
    assert small[0].weight.shape == (4, 3)
    report.count("fault", f"saves past the file-size limit ({suffix})")


@pytest.mark.parametrize("how", ["a first call", "torchx.build", "load_state_dict"])
def test_freezing_before_the_build_holds_after_it(how: str, report: Report) -> None:
    model = L.Sequential(L.Conv2d(4, 3), L.BatchNorm2d(), L.ReLU(), L.Flatten(), L.Linear(5))
    model.freeze()
    model[4].bias.requires_grad_(True)  # one parameter thawed again, before the build too
    if how == "a first call":
        model(torch.randn(2, 3, 8, 8))
    elif how == "torchx.build":
        torchx.build(model, (2, 3, 8, 8))
    else:
        model.load_state_dict(small_model().state_dict())
    trainable = [name for name, parameter in model.named_parameters() if parameter.requires_grad]
    assert trainable == ["4.bias"]
    report.count("fault", f"freeze() before the build, then {how}")


@st.composite
def _widths(draw: st.DrawFn) -> list[int]:
    return draw(st.lists(st.integers(1, 6), min_size=2, max_size=5))


def _mlp(widths: list[int]) -> torch.nn.Sequential:
    layers: list[torch.nn.Module] = []
    for width, following in itertools.pairwise(widths):
        layers += [torch.nn.Linear(width, following), torch.nn.LayerNorm(following)]
    return torch.nn.Sequential(*layers)


@settings(max_examples=300, deadline=None)
@given(
    mine=_widths(),
    theirs=_widths(),
    renamed=st.booleans(),
    match=st.sampled_from(["auto", "name", "position"]),
    strict=st.booleans(),
    adapt=st.sampled_from([(), ("head",)]),
)
def test_load_weights_never_loads_a_tensor_into_a_place_of_another_shape(
    mine: list[int],
    theirs: list[int],
    renamed: bool,
    match: str,
    strict: bool,
    adapt: tuple[str, ...],
    report: Report,
) -> None:
    """Whatever the two architectures, each entry of the model either holds
    the source tensor it was paired with (same shape) or is unchanged; a
    strict load that does not match everything changes nothing."""
    model, source = _mlp(mine), _mlp(theirs)
    state = source.state_dict()
    if renamed:
        state = {f"w{index}": tensor for index, tensor in enumerate(state.values())}
    before = snapshot(model)
    try:
        result = torchx.load_weights(model, state, match=match, strict=strict, adapt=adapt)  # type: ignore[arg-type]
    except torchx.WeightMismatchError as error:
        assert strict and not error.report.ok and not error.report.applied
        assert unchanged(model, before)
        report.count("fuzz", "load_weights: strict loads refused, nothing changed")
        return
    assert result.applied and (result.ok or not strict)
    loaded = {entry.target: entry.source for entry in result.loaded}
    for key, tensor in model.state_dict().items():
        if key in loaded:
            assert torch.equal(tensor, state[loaded[key]])
        else:
            assert torch.equal(tensor, before[key])
    report.count("fuzz", f"load_weights: loads checked entry by entry ({'all' if result.ok else 'partial'})")
