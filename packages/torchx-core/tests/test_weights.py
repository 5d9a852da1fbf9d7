"""load_weights: pairing by name or position, the report, adapters, refusals that change nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn
from toy_layers import Chain, Dense

import torchx
from torchx.core import (
    CheckpointError,
    WeightMismatchError,
)


def small_cnn(channels: int = 3, classes: int = 5) -> nn.Sequential:
    """Layout of a torchvision-style classifier: a stem convolution, a norm, a linear head."""
    return nn.Sequential(
        nn.Conv2d(channels, 4, 3),
        nn.BatchNorm2d(4),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(4, classes),
    )


def renamed(module: nn.Module) -> dict[str, torch.Tensor]:
    """``module``'s state dict under other names, in the same order."""
    return {f"tensor{index}": tensor for index, tensor in enumerate(module.state_dict().values())}


def snapshot(model: nn.Module) -> dict[str, torch.Tensor]:
    return {name: tensor.clone() for name, tensor in model.state_dict().items()}


def same_state(model: nn.Module, state: dict[str, torch.Tensor]) -> bool:
    return all(torch.equal(model.state_dict()[name], tensor) for name, tensor in state.items())


@pytest.fixture
def source() -> nn.Sequential:
    torch.manual_seed(0)
    model = small_cnn()
    model[1].running_mean.uniform_()  # buffers with values a fresh model does not have
    return model.eval()


def test_weights_load_by_name_from_a_module_and_match_its_outputs(source: nn.Sequential) -> None:
    model = small_cnn()
    report = torchx.load_weights(model, source)
    assert report.ok and report.applied and report.match == "name"
    assert len(report.loaded) == len(source.state_dict())
    x = torch.randn(2, 3, 8, 8)
    assert torch.equal(model.eval()(x), source(x))


@pytest.mark.parametrize("suffix", [".pt", ".safetensors"])
def test_weights_load_from_plain_state_dict_files(tmp_path: Path, source: nn.Sequential, suffix: str) -> None:
    path = tmp_path / f"weights{suffix}"
    if suffix == ".pt":
        torch.save(source.state_dict(), path)
    else:
        from safetensors.torch import save_file

        save_file(source.state_dict(), str(path))
    model = small_cnn()
    report = torchx.load_weights(model, path)
    assert report.ok and report.source == str(path)
    assert same_state(model, source.state_dict())


def test_a_dict_with_a_state_dict_entry_is_read_as_lightning_writes_it(
    tmp_path: Path, source: nn.Sequential
) -> None:
    torch.save({"epoch": 3, "state_dict": source.state_dict()}, tmp_path / "last.ckpt")
    model = small_cnn()
    assert torchx.load_weights(model, tmp_path / "last.ckpt").ok
    assert same_state(model, source.state_dict())


def test_a_file_that_would_run_code_is_refused(tmp_path: Path, source: nn.Sequential) -> None:
    torch.save({"model": source}, tmp_path / "pickled.pt")  # a whole module: unpickling runs code
    model = small_cnn()
    before = snapshot(model)
    with pytest.raises(CheckpointError, match="weights-only loading does not allow"):
        torchx.load_weights(model, tmp_path / "pickled.pt")
    assert same_state(model, before)


def test_auto_falls_back_to_positions_when_names_differ_but_the_structure_agrees(
    source: nn.Sequential,
) -> None:
    model = small_cnn()
    report = torchx.load_weights(model, renamed(source))
    assert report.match == "position" and report.ok
    assert report.loaded[0].target == "0.weight" and report.loaded[0].source == "tensor0"
    assert same_state(model, source.state_dict())


def test_match_name_does_not_fall_back_and_names_every_entry(source: nn.Sequential) -> None:
    model = small_cnn()
    before = snapshot(model)
    with pytest.raises(WeightMismatchError) as caught:
        torchx.load_weights(model, renamed(source), match="name")
    report = caught.value.report
    assert not report.applied and report.match == "name"
    assert [entry.target for entry in report.missing] == list(model.state_dict())
    assert [entry.source for entry in report.unexpected] == list(renamed(source))
    assert "by position (match='position'), only 0 of 9 pairs differ" in str(caught.value)
    assert same_state(model, before)


def test_position_checks_the_shape_at_each_step(source: nn.Sequential) -> None:
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(4, 6))
    with pytest.raises(WeightMismatchError) as caught:
        torchx.load_weights(model, renamed(source), match="position")
    weight, bias = caught.value.report.mismatched
    assert (weight.target, weight.source, weight.target_shape, weight.source_shape) == (
        "4.weight",
        "tensor7",
        (6, 4),
        (5, 4),
    )
    assert (bias.target, bias.source, bias.target_shape, bias.source_shape) == (
        "4.bias",
        "tensor8",
        (6,),
        (5,),
    )


def test_a_truncated_source_is_refused_and_the_model_is_untouched(
    tmp_path: Path, source: nn.Sequential
) -> None:
    state = source.state_dict()
    truncated = dict(list(state.items())[:-2])  # the head is missing
    model = small_cnn()
    before = snapshot(model)
    with pytest.raises(WeightMismatchError, match=r"2 missing") as caught:
        torchx.load_weights(model, truncated)
    assert [entry.target for entry in caught.value.report.missing] == ["5.weight", "5.bias"]
    assert same_state(model, before)
    path = tmp_path / "cut.pt"
    torch.save(state, path)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(CheckpointError, match="not readable"):
        torchx.load_weights(model, path)
    assert same_state(model, before)


def test_not_strict_loads_what_matches_and_reports_the_rest(source: nn.Sequential) -> None:
    model = small_cnn(classes=7)
    head = model[5].weight.detach().clone()
    report = torchx.load_weights(model, source, strict=False)
    assert report.applied and not report.ok
    assert [entry.target for entry in report.mismatched] == ["5.weight", "5.bias"]
    assert torch.equal(model[5].weight, head)
    assert torch.equal(model[0].weight, source[0].weight)
    assert "mismatched  5.weight" in str(report)


def test_the_stem_adapter_sums_the_filters_for_grey_input(source: nn.Sequential) -> None:
    model = small_cnn(channels=1)
    with pytest.raises(WeightMismatchError, match=r"adapt=\('stem',\)"):
        torchx.load_weights(model, source)
    report = torchx.load_weights(model, source, adapt=("stem",))
    [adapted] = report.adapted
    assert (adapted.target, adapted.target_shape, adapted.source_shape) == (
        "0.weight",
        (4, 1, 3, 3),
        (4, 3, 3, 3),
    )
    grey = torch.randn(2, 1, 8, 8)
    torch.testing.assert_close(model.eval()(grey), source(grey.expand(-1, 3, -1, -1)))


def test_the_stem_adapter_repeats_and_rescales_for_more_channels(source: nn.Sequential) -> None:
    model = small_cnn(channels=6)
    torchx.load_weights(model, source, adapt=("stem",))
    x = torch.randn(2, 3, 8, 8)
    # Six channels that repeat the three: the same activations as the source's.
    torch.testing.assert_close(model.eval()(x.repeat(1, 2, 1, 1)), source(x))


def test_the_head_adapter_keeps_a_head_of_other_size_fresh_and_says_so(source: nn.Sequential) -> None:
    model = small_cnn(channels=1, classes=10)
    head = model[5].weight.detach().clone()
    report = torchx.load_weights(model, source, adapt=("stem", "head"))
    assert report.ok
    assert [entry.target for entry in report.fresh] == ["5.weight", "5.bias"]
    assert "left at its initialisation" in str(report)
    assert torch.equal(model[5].weight, head)
    assert torch.equal(model[1].running_mean, source[1].running_mean)


def test_adapters_only_touch_their_own_layer() -> None:
    source = nn.Sequential(nn.Conv2d(3, 4, 3), nn.Conv2d(4, 8, 3))
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.Conv2d(2, 8, 3))  # the second conv differs
    with pytest.raises(WeightMismatchError) as caught:
        torchx.load_weights(model, source, adapt=("stem",))
    assert [entry.target for entry in caught.value.report.mismatched] == ["1.weight"]


def test_dtypes_are_cast_and_noted(source: nn.Sequential) -> None:
    model = small_cnn().double()
    report = torchx.load_weights(model, source)
    assert report.ok and model[0].weight.dtype == torch.float64
    assert report.loaded[0].note == "float32 cast to float64"


@pytest.mark.parametrize("match", ["name", "position"])
def test_an_unbuilt_model_builds_from_the_source_shapes(toy_layers: None, match: str) -> None:
    source = nn.Sequential(nn.Linear(4, 8), nn.Linear(8, 2))
    state = source.state_dict() if match == "name" else renamed(source)
    model = Chain(Dense(8), Dense(2))
    report = torchx.load_weights(model, state, match=match)  # type: ignore[arg-type]
    assert torchx.is_built(model) and report.ok
    assert report.loaded[0].target_shape is None and report.loaded[0].note == "builds from this shape"
    x = torch.randn(3, 4)
    assert torch.equal(model(x), source(x))


def test_adapters_need_a_built_model(toy_layers: None) -> None:
    with pytest.raises(CheckpointError, match=r"build it first: torchx.build\(model, input_shape\)"):
        torchx.load_weights(Chain(Dense(8)), {}, adapt=("head",))


def test_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="match must be"):
        torchx.load_weights(small_cnn(), {}, match="names")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="adapt takes 'stem' and 'head'"):
        torchx.load_weights(small_cnn(), {}, adapt=("tail",))  # type: ignore[arg-type]
    with pytest.raises(CheckpointError, match="entry 'a' is not a tensor"):
        torchx.load_weights(small_cnn(), {"a": 1})  # type: ignore[dict-item]


def test_a_long_report_prints_as_a_short_table() -> None:
    model = nn.Sequential(*(nn.Linear(2, 2) for _ in range(20)))
    report = torchx.load_weights(model, {}, strict=False)
    text = str(report)
    assert len(text.splitlines()) == 1 + 2 + 20 + 1
    assert text.splitlines()[-1] == "... and 20 more (the report's lists hold every entry)"


# -- wrapper prefixes, and sources that do not keep the model's order ---------------------


def normed() -> nn.Sequential:
    """A linear layer and a LayerNorm: the norm's weight and bias have one shape."""
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4))
    with torch.no_grad():
        model[1].weight.uniform_(1, 2)  # weight and bias told apart by their values
        model[1].bias.uniform_(-2, -1)
    return model


def wrapped(state: dict[str, torch.Tensor], prefix: str) -> dict[str, torch.Tensor]:
    return {prefix + key: tensor for key, tensor in state.items()}


@pytest.mark.parametrize("prefix", ["module.", "_orig_mod.", "model.", "_orig_mod.module."])
@pytest.mark.parametrize("suffix", [".pt", ".safetensors"])
def test_keys_with_a_wrapper_prefix_load_by_name(tmp_path: Path, prefix: str, suffix: str) -> None:
    from safetensors.torch import save_file

    source = normed()
    path = tmp_path / f"ddp{suffix}"
    state = wrapped(source.state_dict(), prefix)
    save_file(state, str(path)) if suffix == ".safetensors" else torch.save(state, path)
    model = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4))
    report = torchx.load_weights(model, path)
    assert report.ok and report.match == "name"
    assert [(entry.target, entry.source) for entry in report.loaded] == [
        (key, prefix + key) for key in model.state_dict()
    ]
    assert same_state(model, source.state_dict())


def test_a_model_with_a_wrapper_prefix_loads_a_plain_state_dict() -> None:
    source = normed()
    model = nn.DataParallel(nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4)))  # keys: module.0.weight ...
    report = torchx.load_weights(model, source.state_dict(), match="name")
    assert (
        report.ok and report.loaded[2].target == "module.1.weight" and report.loaded[2].source == "1.weight"
    )
    assert torch.equal(model.module[1].bias, source[1].bias)


def test_a_safetensors_file_is_never_paired_by_position_unasked(tmp_path: Path) -> None:
    from safetensors.torch import save_file

    source = normed()
    # Names that match nothing and no wrapper: only positions could pair them.
    save_file(
        {f"net.{key}": tensor for key, tensor in source.state_dict().items()}, str(tmp_path / "w.safetensors")
    )
    model = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4))
    before = snapshot(model)
    with pytest.raises(WeightMismatchError, match="sorted by name, not in the model's order") as caught:
        torchx.load_weights(model, tmp_path / "w.safetensors")
    assert caught.value.report.match == "name" and len(caught.value.report.missing) == 4
    assert same_state(model, before)
    # Asked for, position pairs the file's sorted order, and the names (under net.) still veto each pair.
    with pytest.raises(WeightMismatchError) as caught:
        torchx.load_weights(model, tmp_path / "w.safetensors", match="position")
    assert [(entry.target, entry.source, entry.note) for entry in caught.value.report.mismatched] == [
        ("0.weight", "net.0.bias", "by its name, net.0.bias belongs in 0.bias"),
        ("0.bias", "net.0.weight", "by its name, net.0.weight belongs in 0.weight"),
        ("1.weight", "net.1.bias", "by its name, net.1.bias belongs in 1.bias"),
        ("1.bias", "net.1.weight", "by its name, net.1.weight belongs in 1.weight"),
    ]
    assert same_state(model, before)


def test_the_same_names_from_a_state_dict_in_order_load_by_position() -> None:
    source = normed()
    state = {f"net.{key}": tensor for key, tensor in source.state_dict().items()}
    model = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4))
    report = torchx.load_weights(model, state)
    assert report.match == "position" and report.ok
    assert torch.equal(model[1].weight, source[1].weight) and torch.equal(model[1].bias, source[1].bias)


def test_a_pair_by_position_never_contradicts_the_names() -> None:
    source = normed()
    swapped = dict(reversed(list(source.state_dict().items())[2:]))  # the norm's bias first
    state = {**dict(list(source.state_dict().items())[:2]), **swapped}
    model = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4))
    before = snapshot(model)
    with pytest.raises(WeightMismatchError) as caught:
        torchx.load_weights(model, state, match="position")
    assert [(entry.target, entry.note) for entry in caught.value.report.mismatched] == [
        ("1.weight", "by its name, 1.bias belongs in 1.bias"),
        ("1.bias", "by its name, 1.weight belongs in 1.weight"),
    ]
    assert same_state(model, before)
    other = {f"net.{key}": tensor for key, tensor in state.items()}  # names that match none of the model's
    with pytest.raises(WeightMismatchError, match="only 2 of 4 pairs differ in shape or name"):
        torchx.load_weights(model, other)
    assert same_state(model, before)


def test_position_reports_the_entries_past_the_shorter_side() -> None:
    torch.manual_seed(0)
    model, source = nn.Sequential(nn.Linear(1, 1), nn.Linear(1, 1)), nn.Sequential(nn.Linear(1, 1))
    report = torchx.load_weights(model, source.state_dict(), match="position", strict=False)
    assert [entry.target for entry in report.missing] == ["1.weight", "1.bias"]
    assert torch.equal(model[0].weight, source[0].weight)
    report = torchx.load_weights(source, model.state_dict(), match="position", strict=False)
    assert [entry.source for entry in report.unexpected] == ["1.weight", "1.bias"]
