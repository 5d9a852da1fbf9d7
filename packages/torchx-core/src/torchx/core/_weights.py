"""Loading weights from any source into a model, with a report of what matched.

``load_weights(model, source)`` pairs the model's state-dict entries with the
source's, by name or by position, checks every pair's shape, and loads only
once it knows what every entry becomes. Names are compared as written, or
else without the prefixes wrappers add to every key (``module.`` of
DataParallel and DDP, ``_orig_mod.`` of ``torch.compile``, ``model.``). A
pair by position never contradicts the names: a ``bias`` does not load into
a ``weight``, nor a tensor into a place that its name gives to another, also
where each side's names share another prefix (Hugging Face's
``embeddings.word_embeddings.weight`` belongs in a graph's
``word_embeddings.weight``, whatever the order its state dict has).

Two mismatches that users meet with pretrained models can be adapted on request:

- ``"stem"``: the first convolution takes another number of input channels
  (grey or multispectral images into an RGB model). For one channel its
  filters are summed over the source's channels (a grey image gives what the
  same image repeated as RGB gave); for more they are repeated cyclically
  and scaled by ``source_channels / channels``, which keeps the activations'
  scale.
- ``"head"``: the last linear layer has another number of outputs (another
  set of classes). It keeps its fresh initialisation, and the report says so.

One layout difference is adapted without asking: Hugging Face's ``Conv1D``
(GPT-2's projections) stores its weight as ``(in, out)``, the transpose of
``nn.Linear``'s. Loaded from such a module, its weights are transposed into
the model's linear layers, and the report says so. A file or state dict does
not say which weights are stored that way: where some of its weights fit a
linear layer only transposed, every square weight of a linear layer (which
fits either way) is reported mismatched instead of loaded, since nothing can
tell its layout; load from the module instead.

A tensor the source holds under two keys (a tied weight: Hugging Face's
``lm_head.weight`` is ``transformer.wte.weight``) is loaded once; its second
key is reported ``"tied"``, not unexpected, when the first one was loaded.

Nothing is ever loaded silently wrong: with ``strict=True`` (the default) the
load raises before changing anything unless every entry was loaded or
adapted as asked; with ``strict=False`` what fits is loaded, and the report
lists the rest.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal, get_args

import torch
from torch import nn

from torchx.core._checkpoint import load_state, read_weights
from torchx.core._dtypes import dtype_name
from torchx.core._errors import CheckpointError
from torchx.core._pending import is_pending
from torchx.core._summary import format_table, shape_text

__all__ = ["Adapter", "Match", "WeightEntry", "WeightMismatchError", "WeightReport", "load_weights"]

Match = Literal["auto", "name", "position"]
Adapter = Literal["stem", "head"]
Status = Literal["loaded", "adapted", "fresh", "tied", "missing", "unexpected", "mismatched"]

_PROBLEMS: tuple[Status, ...] = ("missing", "unexpected", "mismatched")
Shape = tuple[int, ...]

MAX_ROWS = 20
"""Most rows a printed report shows (its lists hold every entry)."""

WRAPPER_PREFIXES = ("module.", "_orig_mod.", "model.")
"""Prefixes a wrapper adds to every key: DataParallel's and DDP's, torch.compile's, and the
``model.`` of a training module that holds the model (Lightning's, say)."""


class WeightMismatchError(CheckpointError):
    """A strict :func:`load_weights` found entries that did not match; nothing was loaded."""

    def __init__(self, message: str, report: WeightReport) -> None:
        super().__init__(message)
        self.report = report


@dataclass(frozen=True)
class WeightEntry:
    """What became of one state-dict entry of the model, or of the source."""

    status: Status
    target: str | None
    """The model's key (None for an entry of the source that the model lacks)."""
    source: str | None
    """The source's key (None for an entry of the model that the source lacks)."""
    target_shape: Shape | None
    """None where the model's layer is unbuilt (it builds from the source's shape)."""
    source_shape: Shape | None
    note: str = ""


@dataclass(frozen=True)
class WeightReport:
    """Every entry of a :func:`load_weights`: loaded, adapted, left fresh, or not matched.

    ``str(report)`` is a short table of everything that was not simply loaded.
    """

    source: str
    match: Literal["name", "position"]
    entries: tuple[WeightEntry, ...]
    applied: bool
    """Whether the model was changed (False when a strict load was refused)."""

    def _having(self, status: Status) -> list[WeightEntry]:
        return [entry for entry in self.entries if entry.status == status]

    @property
    def loaded(self) -> list[WeightEntry]:
        return self._having("loaded")

    @property
    def adapted(self) -> list[WeightEntry]:
        return self._having("adapted")

    @property
    def fresh(self) -> list[WeightEntry]:
        """The model's entries left at their initialisation by the ``"head"`` adapter."""
        return self._having("fresh")

    @property
    def tied(self) -> list[WeightEntry]:
        """The source's entries that are the same tensor as another of its entries that
        was loaded (a tied weight's second key: Hugging Face's ``lm_head.weight``)."""
        return self._having("tied")

    @property
    def missing(self) -> list[WeightEntry]:
        """The model's entries the source has nothing for."""
        return self._having("missing")

    @property
    def unexpected(self) -> list[WeightEntry]:
        """The source's entries the model has no place for."""
        return self._having("unexpected")

    @property
    def mismatched(self) -> list[WeightEntry]:
        """Pairs whose shapes differ (and no requested adapter applies)."""
        return self._having("mismatched")

    @property
    def ok(self) -> bool:
        """Whether every entry on both sides was loaded, adapted or left fresh as asked."""
        return not any(entry.status in _PROBLEMS for entry in self.entries)

    def __str__(self) -> str:
        counts = ", ".join(
            f"{sum(entry.status == status for entry in self.entries)} {status}"
            for status in ("adapted", "fresh", "tied", *_PROBLEMS)
        )
        targets = sum(entry.target is not None for entry in self.entries)
        verb = "loaded" if self.applied else "would load (nothing was changed)"
        lines = [
            f"{verb} {len(self.loaded)} of {targets} model tensors from {self.source}, "
            f"matched by {self.match}; {counts}"
        ]
        shown = [entry for entry in self.entries if entry.status != "loaded"]
        rows = [
            [
                entry.status,
                entry.target or "-",
                shape_text(entry.target_shape) if entry.target_shape is not None else "-",
                entry.source or "-",
                shape_text(entry.source_shape) if entry.source_shape is not None else "-",
                entry.note,
            ]
            for entry in shown[:MAX_ROWS]
        ]
        if rows:
            headers = ["status", "model key", "model shape", "source key", "source shape", "note"]
            lines += format_table(headers, rows, numeric=0)
        if len(shown) > MAX_ROWS:
            lines.append(f"... and {len(shown) - MAX_ROWS} more (the report's lists hold every entry)")
        return "\n".join(lines)


def load_weights(
    model: nn.Module,
    source: Mapping[str, torch.Tensor] | nn.Module | str | os.PathLike[str],
    *,
    match: Match = "auto",
    strict: bool = True,
    adapt: Collection[Adapter] = (),
) -> WeightReport:
    """Load ``source``'s tensors into ``model`` and report what each entry became.

    :param source: a state dict, a module, or a weights file: a TorchX
        checkpoint, a ``torch.save`` of a state dict (read with
        ``weights_only=True``, so it cannot run code) or a ``.safetensors`` file.
    :param match: ``"name"`` pairs entries by key (as written, or else without
        the wrapper prefixes every key of a side has: ``module.``,
        ``_orig_mod.``, ``model.``); ``"position"`` pairs them in the source's
        order; ``"auto"`` pairs by name, and by position when the names do not
        line up but the structures agree (as many tensors, the same shapes in
        order, up to the requested adapters) and the source keeps the order its
        model registered them in: a module, a state dict, a ``torch.save`` file.
        A safetensors file stores its tensors sorted by name, so ``"auto"``
        never pairs its tensors by position; ``"position"`` does, in that
        sorted order, at the risk of swapping tensors of one shape (``layers.10``
        sorts before ``layers.2``). No pair by position contradicts the names:
        one whose source names another kind of tensor of the model (a ``bias``
        for a ``weight``), or another of its places, is ``"mismatched"``.
    :param strict: raise unless every entry of both sides was loaded or
        adapted; otherwise load what fits and report the rest.
    :param adapt: ``"stem"`` and/or ``"head"`` (see the module's docs).
    :raises CheckpointError: ``strict`` and not everything matched (the
        report is the error's ``report``); a source that cannot be read. The
        model is unchanged then.

    An unbuilt model builds from the source's shapes; adapters need a built
    model (its input decides the stem's channels).
    """
    if match not in get_args(Match):
        raise ValueError(f"load_weights: match must be 'auto', 'name' or 'position', got {match!r}")
    unknown = sorted(set(adapt) - set(get_args(Adapter)))
    if unknown:
        raise ValueError(f"load_weights: adapt takes 'stem' and 'head', got {', '.join(map(repr, unknown))}")
    described, state, in_order, transposed = _source_state(source)
    targets = model.state_dict(keep_vars=True)
    if adapt and any(is_pending(tensor) for tensor in targets.values()):
        raise CheckpointError(
            f"load_weights into {type(model).__name__} with adapt={tuple(adapt)}: the model is not built, "
            "and its input decides what to adapt; build it first: torchx.build(model, input_shape)"
        )
    roles = _roles(model, adapt, transposed)
    names = _Names.of(targets, state)
    chosen: Literal["name", "position"] = "name"
    aliases = _aliases(state)
    report_entries, tensors = _pair(targets, state, _by_name(names), roles, aliases=aliases)
    by_position = None
    if match == "position" or (_names_disagree(report_entries) and len(targets) == len(state)):
        pairs = list(itertools.zip_longest(targets, state))
        by_position = _pair(targets, state, pairs, roles, aliases=aliases, names=names)
        agrees = in_order and not any(entry.status == "mismatched" for entry in by_position[0])
        if match == "position" or (match == "auto" and agrees):
            chosen, (report_entries, tensors) = "position", by_position
    report = WeightReport(described, chosen, tuple(report_entries), applied=False)
    if strict and not report.ok:
        hint = _hint(report, None if chosen == "position" else by_position, in_order, names)
        raise WeightMismatchError(
            f"load_weights into {type(model).__name__}: not everything matched\n{report}\nhint: {hint}",
            report,
        )
    load_state(model, tensors, described, partial=not report.ok or bool(report.fresh))
    return replace(report, applied=True)


def _source_state(
    source: Mapping[str, torch.Tensor] | nn.Module | str | os.PathLike[str],
) -> tuple[str, dict[str, torch.Tensor], bool, frozenset[str] | None]:
    """A description of ``source`` for messages, its state dict, whether that lists
    the tensors in the order their model registered them, and the keys of the
    weights it stores as ``(in, out)`` (None where the source cannot tell)."""
    if isinstance(source, nn.Module):
        stored_in_out = frozenset(
            _key(name, "weight")
            for name, module in source.named_modules(remove_duplicate=False)
            if _is_hugging_face_conv1d(module)
        )
        return f"a {type(source).__name__}", source.state_dict(), True, stored_in_out
    if isinstance(source, Mapping):
        bad = [
            key
            for key, value in source.items()
            if not isinstance(key, str) or not isinstance(value, torch.Tensor)
        ]
        if bad:
            raise CheckpointError(
                f"load_weights: the source's entry {bad[0]!r} is not a tensor named by a string"
            )
        return "a state dict", dict(source), True, None
    checkpoint = read_weights(source, map_location="cpu")
    return os.fspath(source), checkpoint.state_dict, checkpoint.in_order, None


def _is_hugging_face_conv1d(module: nn.Module) -> bool:
    """Whether ``module`` is Hugging Face's ``Conv1D``, told by its class (transformers is not imported)."""
    kind = type(module)
    return kind.__name__ == "Conv1D" and kind.__module__.partition(".")[0] == "transformers"


_Pairs = Sequence[tuple[str | None, str | None]]
"""(the model's key, the source's key) pairs; None where one side has no partner."""


@dataclass(frozen=True)
class _Names:
    """Each key of the model and of the source without its side's wrapper prefixes."""

    targets: dict[str, str]
    sources: dict[str, str]
    owners: dict[str, str]
    """The model's key of each name."""
    kinds: frozenset[str]
    """The last parts of the model's names: weight, bias, running_mean..."""
    bare_targets: dict[str, str]
    """Each of the model's names without the dotted prefix that all of them share."""
    bare_sources: dict[str, str]
    bare_owners: dict[str, str]
    """The model's key of each bare name."""

    @classmethod
    def of(cls, targets: Collection[str], sources: Collection[str]) -> _Names:
        mine, theirs = _unwrapped(targets), _unwrapped(sources)
        owners = {name: key for key, name in mine.items()}
        bare_mine = _bare(mine)
        return cls(
            mine,
            theirs,
            owners,
            frozenset(map(_kind, owners)),
            bare_mine,
            _bare(theirs),
            {name: key for key, name in bare_mine.items()},
        )


def _unwrapped(keys: Collection[str]) -> dict[str, str]:
    """Each of ``keys`` without the wrapper prefixes (``module.``, ...) that all of them have."""
    names = {key: key for key in keys}
    while names:
        prefix = next(
            (
                prefix
                for prefix in WRAPPER_PREFIXES
                if all(name.startswith(prefix) for name in names.values())
            ),
            None,
        )
        if prefix is None:
            break
        names = {key: name[len(prefix) :] for key, name in names.items()}
    return names


def _bare(names: Mapping[str, str]) -> dict[str, str]:
    """Each of ``names`` without the dotted prefix all of them share (``embeddings.`` of
    ``embeddings.word_embeddings.weight``); the last part of a name always stays."""
    parts = [name.split(".")[:-1] for name in names.values()]
    shared = 0
    while parts and all(len(part) > shared and part[shared] == parts[0][shared] for part in parts):
        shared += 1
    return {key: name.split(".", shared)[shared] for key, name in names.items()}


def _by_name(names: _Names) -> _Pairs:
    """Pairs of keys of one name: as written, or else (where that pairs more) without wrapper prefixes."""
    written = _same_names({key: key for key in names.targets}, {key: key for key in names.sources})
    if all(target is not None and source is not None for target, source in written):
        return written
    unwrapped = _same_names(names.targets, names.sources)
    return unwrapped if _paired(unwrapped) > _paired(written) else written


def _same_names(targets: Mapping[str, str], sources: Mapping[str, str]) -> _Pairs:
    """Pairs of the keys of ``targets`` and ``sources`` that map to one name, then the source's unpaired keys."""
    by_name = {name: key for key, name in sources.items()}
    pairs: list[tuple[str | None, str | None]] = [(key, by_name.get(name)) for key, name in targets.items()]
    paired = {source for _, source in pairs}
    return pairs + [(None, key) for key in sources if key not in paired]


def _paired(pairs: _Pairs) -> int:
    return sum(target is not None and source is not None for target, source in pairs)


def _contradiction(target: str, source: str, names: _Names) -> str | None:
    """How the names of a pair by position say it is wrong, or None: the source's name is
    another place of the model's (as written, or where each side's names drop the prefix
    all of them share: ``embeddings.position_embeddings.weight`` is the model's
    ``position_embeddings.weight``), or another kind of tensor than the model's (bias, weight)."""
    mine, theirs = names.targets[target], names.sources[source]
    if theirs == mine:
        return None
    owner = names.owners.get(theirs)
    if owner is None and names.bare_sources[source] != names.bare_targets[target]:
        owner = names.bare_owners.get(names.bare_sources[source])
    if owner is not None:
        return f"by its name, {source} belongs in {owner}"
    kind, their_kind = _kind(mine), _kind(theirs)
    if their_kind != kind and their_kind in names.kinds:
        return f"by their names, a {their_kind} paired with a {kind}"
    return None


def _kind(name: str) -> str:
    """What a tensor is in its module: the last part of its name (``weight`` of ``0.weight``)."""
    return name.rpartition(".")[2]


def _names_disagree(entries: list[WeightEntry]) -> bool:
    return any(entry.status in ("missing", "unexpected") for entry in entries)


@dataclass(frozen=True)
class _Roles:
    """The model's keys that a requested adapter may change, and what the layouts say."""

    stem: str | None
    head: frozenset[str]
    linear_weights: frozenset[str]
    """The weights of the model's ``nn.Linear`` layers, stored ``(out, in)``."""
    stored_in_out: frozenset[str] | None
    """The source's keys of weights stored ``(in, out)``; None where the source cannot tell."""


def _roles(model: nn.Module, adapt: Collection[Adapter], stored_in_out: frozenset[str] | None) -> _Roles:
    convolutions = [
        name for name, module in model.named_modules() if isinstance(module, nn.modules.conv._ConvNd)
    ]
    linears = [name for name, module in model.named_modules(remove_duplicate=False) if _is_linear(module)]
    stem = _key(convolutions[0], "weight") if "stem" in adapt and convolutions else None
    head = (
        frozenset({_key(linears[-1], "weight"), _key(linears[-1], "bias")})
        if "head" in adapt and linears
        else frozenset()
    )
    return _Roles(stem, head, frozenset(_key(name, "weight") for name in linears), stored_in_out)


def _is_linear(module: nn.Module) -> bool:
    """Whether ``module`` is an ``nn.Linear``, or a layer that builds one."""
    native = getattr(type(module), "native_class", None)
    return isinstance(module, nn.Linear) or (isinstance(native, type) and issubclass(native, nn.Linear))


def _key(module: str, tensor: str) -> str:
    return f"{module}.{tensor}" if module else tensor


def _aliases(state: Mapping[str, torch.Tensor]) -> dict[str, str]:
    """Each key of ``state`` whose tensor is the same as an earlier key's (the same
    memory, shape, strides and dtype: a tied weight), mapped to that earlier key."""
    first: dict[tuple[object, ...], str] = {}
    aliases: dict[str, str] = {}
    for key, tensor in state.items():
        if tensor.is_meta or tensor.layout != torch.strided or tensor.numel() == 0:
            continue
        view = (
            tensor.device,
            tensor.untyped_storage().data_ptr(),
            tensor.storage_offset(),
            tuple(tensor.shape),
            tensor.stride(),
            tensor.dtype,
        )
        earlier = first.setdefault(view, key)
        if earlier != key:
            aliases[key] = earlier
    return aliases


def _tied(entries: list[WeightEntry], aliases: Mapping[str, str]) -> list[WeightEntry]:
    """``entries``, with each source entry left unexpected that is the same tensor as a
    source entry that was loaded or adapted marked tied (one tensor, two keys)."""
    placed = {entry.source: entry.target for entry in entries if entry.status in ("loaded", "adapted")}

    def tied(entry: WeightEntry) -> WeightEntry:
        earlier = aliases.get(entry.source or "")
        if entry.status != "unexpected" or earlier not in placed:
            return entry
        return replace(
            entry, status="tied", note=f"the same tensor as {earlier}, loaded into {placed[earlier]}"
        )

    return [tied(entry) for entry in entries] if aliases else entries


def _pair(
    targets: Mapping[str, torch.Tensor],
    state: Mapping[str, torch.Tensor],
    pairs: _Pairs,
    roles: _Roles,
    *,
    aliases: Mapping[str, str],
    names: _Names | None = None,
) -> tuple[list[WeightEntry], dict[str, torch.Tensor]]:
    """Each pair's entry in the report, and the tensors to load by the model's keys;
    with ``names`` (pairs by position), a pair its names contradict is mismatched;
    a source entry that ``aliases`` says is another's tensor is tied to it."""
    entries: list[WeightEntry] = []
    tensors: dict[str, torch.Tensor] = {}
    for target, source in pairs:
        tensor = None if target is None else targets[target]
        given = None if source is None else state[source]
        target_shape = None if tensor is None or is_pending(tensor) else tuple(tensor.shape)
        source_shape = None if given is None else tuple(given.shape)
        if target is None or source is None:
            status: Status = "unexpected" if target is None else "missing"
            entries.append(WeightEntry(status, target, source, target_shape, source_shape))
            continue
        contradiction = None if names is None else _contradiction(target, source, names)
        if contradiction is not None:
            entries.append(
                WeightEntry("mismatched", target, source, target_shape, source_shape, contradiction)
            )
            continue
        value, status, note = _fitted(target, targets[target], source, state[source], roles)
        entries.append(WeightEntry(status, target, source, target_shape, source_shape, note))
        if value is not None:
            tensors[target] = value
    if roles.stored_in_out is None and any(_fits_only_transposed(entry, roles) for entry in entries):
        entries = [_layout_unknown(entry, roles, tensors) for entry in entries]
    return _tied(entries, aliases), tensors


def _fits_only_transposed(entry: WeightEntry, roles: _Roles) -> bool:
    """Whether ``entry`` pairs a linear layer's weight with a non-square tensor of the transposed shape."""
    return (
        entry.status == "mismatched"
        and entry.target in roles.linear_weights
        and entry.target_shape is not None
        and entry.source_shape != entry.target_shape
        and entry.source_shape == entry.target_shape[::-1]
    )


def _layout_unknown(entry: WeightEntry, roles: _Roles, tensors: dict[str, torch.Tensor]) -> WeightEntry:
    """``entry``, mismatched if it loads a square linear weight from a source that stores
    others transposed (its layout cannot be told); removes it from ``tensors`` then."""
    shape = entry.target_shape
    if entry.status != "loaded" or entry.target not in roles.linear_weights or shape is None:
        return entry
    if shape != shape[::-1]:
        return entry
    del tensors[entry.target]
    return replace(
        entry,
        status="mismatched",
        note="square, and the source stores other linear weights transposed (Hugging Face's Conv1D keeps "
        "(in, out)): its layout cannot be told; load from the module, which says which are Conv1D",
    )


def _fitted(
    key: str, tensor: torch.Tensor, source: str, given: torch.Tensor, roles: _Roles
) -> tuple[torch.Tensor | None, Status, str]:
    """What to load into the model's ``tensor`` from the source's ``given``, its status and a note."""
    if roles.stored_in_out is not None and source in roles.stored_in_out and key in roles.linear_weights:
        return _fitted_transposed(tensor, given)
    if is_pending(tensor):
        return given, "loaded", "builds from this shape"
    note = "" if given.dtype == tensor.dtype else f"{_dtype(given)} cast to {_dtype(tensor)}"
    if given.shape == tensor.shape:
        return given.to(tensor.dtype), "loaded", note
    if key == roles.stem and _differs_only_in(given.shape, tensor.shape, dim=1):
        return _adapted_stem(given.to(tensor.dtype), tensor.shape[1])
    if key in roles.head and _differs_only_in(given.shape, tensor.shape, dim=0):
        return (
            None,
            "fresh",
            f"head: {given.shape[0]} outputs in the source, {tensor.shape[0]} here; left at its initialisation",
        )
    return None, "mismatched", note


def _fitted_transposed(tensor: torch.Tensor, given: torch.Tensor) -> tuple[torch.Tensor | None, Status, str]:
    """A Conv1D weight, stored ``(in, out)``, for a linear layer's ``tensor``."""
    value = given.t().contiguous()
    if is_pending(tensor):
        return value, "adapted", "Conv1D's (in, out) weight transposed; builds from this shape"
    if value.shape != tensor.shape:
        return None, "mismatched", "Conv1D's (in, out) weight does not fit even transposed"
    note = "Conv1D's (in, out) weight transposed"
    if given.dtype != tensor.dtype:
        note += f"; {_dtype(given)} cast to {_dtype(tensor)}"
    return value.to(tensor.dtype), "adapted", note


def _dtype(tensor: torch.Tensor) -> str:
    return dtype_name(tensor.dtype)


def _differs_only_in(a: Sequence[int], b: Sequence[int], *, dim: int) -> bool:
    """Whether shapes ``a`` and ``b`` differ in ``dim`` and nowhere else."""
    return len(a) == len(b) > dim and [
        index for index, (x, y) in enumerate(zip(a, b, strict=True)) if x != y
    ] == [dim]


def _adapted_stem(weight: torch.Tensor, channels: int) -> tuple[torch.Tensor, Status, str]:
    """The first convolution's filters for ``channels`` input channels."""
    have = weight.shape[1]
    if channels == 1:
        return (
            weight.sum(dim=1, keepdim=True),
            "adapted",
            f"stem: the {have} input channels' filters summed into 1",
        )
    repeats = -(-channels // have)
    adapted = weight.repeat(1, repeats, *([1] * (weight.dim() - 2)))[:, :channels] * (have / channels)
    return (
        adapted,
        "adapted",
        f"stem: the {have} input channels' filters repeated to {channels}, scaled by {have}/{channels}",
    )


def _hint(
    report: WeightReport,
    by_position: tuple[list[WeightEntry], dict[str, torch.Tensor]] | None,
    in_order: bool,
    names: _Names,
) -> str:
    """How to load what did not match."""
    hints = []
    renamed = _renaming(names)
    if renamed:
        hints.append(renamed)
    mismatched = report.mismatched
    if by_position is not None:
        positional = [entry for entry in by_position[0] if entry.status == "mismatched"]
        differing = [str(entry.target) for entry in positional]
        if in_order:
            hints.append(
                f"by position (match='position'), only {len(differing)} of {len(by_position[0])} pairs differ "
                f"in shape or name: {', '.join(differing[:3])}{', ...' if len(differing) > 3 else ''}"
            )
        else:
            hints.append(
                f"{report.source} lists its tensors sorted by name, not in the model's order, so they are not "
                "paired by position unless you ask: match='position' pairs them in that sorted order, which "
                "can swap tensors of one shape (check which source key each model key gets in the report)"
            )
        mismatched = mismatched + positional
    if any(
        _entry_differs_only_in(entry, dim=1) and len(entry.target_shape or ()) >= 3 for entry in mismatched
    ):
        hints.append("adapt=('stem',) adapts a first convolution to other input channels")
    if any(
        _entry_differs_only_in(entry, dim=0) and len(entry.target_shape or ()) == 2 for entry in mismatched
    ):
        hints.append("adapt=('head',) keeps a last linear layer with other outputs at its initialisation")
    hints.append("strict=False loads what matches and returns this report")
    return "; ".join(hints)


def _renaming(names: _Names) -> str:
    """How to load by name a source whose names are the model's under another shared prefix, or ""."""
    if not names.targets or set(names.bare_targets.values()) != set(names.bare_sources.values()):
        return ""
    theirs, mine = (
        _shared_prefix(names.sources, names.bare_sources),
        _shared_prefix(names.targets, names.bare_targets),
    )
    if theirs == mine:
        return ""
    renamed = f"{mine!r} + key.removeprefix({theirs!r})" if mine else f"key.removeprefix({theirs!r})"
    return (
        f"the source's names are the model's with the prefix {theirs!r} for {mine!r}, and names pair "
        f"whatever the order: load its state dict renamed, {{{renamed}: tensor for key, tensor in "
        "state.items()}, by name"
    )


def _shared_prefix(names: Mapping[str, str], bare: Mapping[str, str]) -> str:
    key = next(iter(names))
    return names[key][: len(names[key]) - len(bare[key])]


def _entry_differs_only_in(entry: WeightEntry, *, dim: int) -> bool:
    """Whether ``entry``'s source and model shapes differ in ``dim`` and nowhere else."""
    if entry.target_shape is None or entry.source_shape is None:
        return False
    return _differs_only_in(entry.source_shape, entry.target_shape, dim=dim)
