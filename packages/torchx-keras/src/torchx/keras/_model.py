"""Walking a Keras model config into a TorchX Functional.

Sequential and functional models (several inputs and outputs, lists or
dicts, shared layers, models nested as layers) become an ``L.Functional``
whose inputs and outputs are in Keras's layout; every layer goes through the
converter its class name registered (:mod:`torchx.keras._layer`). Every
entry is checked as data first: a class outside the table, a ``Lambda``, a
custom object or a masking argument is refused with its place in the config.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterator
from typing import Any

import torch

import torchx.layers as L
from torchx.core import TorchXError
from torchx.functional import Functional
from torchx.keras._archive import WeightGroup
from torchx.keras._layer import CONVERTERS, KerasLayer, module_name, unsupported
from torchx.keras._values import Layouts, Value, keras_order
from torchx.plugin import SpecError, dtype_named

__all__ = ["MODEL_CLASSES", "GraphBuilder"]

MODEL_CLASSES = ("Functional", "Sequential", "Model")
LAYOUT_READERS = frozenset({"Flatten"})
"""Layers whose converter reads ``data_format`` itself; every other layer is converted channels_last only."""
INPUT_KEYWORDS = ("inputs", "sequences")
"""The names of the tensor argument of Keras's layers' ``call`` (``sequences``: the recurrent layers')."""
Node = tuple[KerasLayer, int, dict[str, Any]]
"""A call of a layer in a functional config: the layer, the call's index and its node (args, kwargs)."""

_CODE_REASON = (
    "it holds Python code, and converting never runs code from a file (the Keras CVEs of 2024-2025 were "
    "files running code on load); rewrite it as supported layers, or convert the model without it and add "
    "the computation in PyTorch"
)


def snake_case(class_name: str) -> str:
    """The name Keras gives a layer's group in the weights file (``BatchNormalization`` -> ``batch_normalization``)."""
    name = re.sub(r"\W+", "", class_name)
    name = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", name).lower()


def weight_group_names(class_names: list[str]) -> list[str]:
    """Each layer's group in its model's weights, numbered per class in layer order as Keras saves them."""
    seen: dict[str, int] = {}
    names = []
    for class_name in class_names:
        name = snake_case(class_name)
        if name in seen:
            seen[name] += 1
            names.append(f"{name}_{seen[name]}")
        else:
            seen[name] = 0
            names.append(name)
    return names


class GraphBuilder:
    """Converts one ``.keras`` model config (and the models nested in it) into TorchX."""

    def __init__(self) -> None:
        self.layouts = Layouts()
        self._trainable = True
        """Whether the models being converted (the outer one, and any nested one) are trainable."""

    # -- models -------------------------------------------------------------

    def model(self, entry: dict[str, Any], weights: WeightGroup, where: str) -> Functional:
        """The ``L.Functional`` for the model config ``entry`` (a Functional or a Sequential)."""
        class_name = entry.get("class_name")
        config = entry.get("config")
        if class_name not in MODEL_CLASSES or not isinstance(config, dict):
            raise SpecError(where or "$", f"is a {class_name!r}, not a Keras Sequential or functional model")
        layers = config.get("layers")
        if not isinstance(layers, list) or not all(isinstance(layer, dict) for layer in layers):
            raise SpecError(f"{where}.layers" if where else "layers", "is not a list of layer configs")
        for index, layer in enumerate(layers):
            check_entry(layer, _place(where, index))
        name = str(config.get("name") or "model")
        if class_name == "Sequential":
            return self._sequential(config, layers, weights.group("layers"), where, name)
        return self._functional(config, layers, weights.group("layers"), where, name)

    def _sequential(
        self,
        config: dict[str, Any],
        entries: list[dict[str, Any]],
        weights: WeightGroup,
        where: str,
        name: str,
    ) -> Functional:
        taken: set[str] = set()
        shape, dtype = config.get("build_input_shape"), "float32"
        if entries and entries[0].get("class_name") == "InputLayer":
            shape = entries[0]["config"].get("batch_shape")
            dtype = _dtype_name(entries[0]["config"].get("dtype"))
        body = [
            (index, entry) for index, entry in enumerate(entries) if entry.get("class_name") != "InputLayer"
        ]
        if shape is None:
            raise SpecError(
                where or "$", "the Sequential model was never built, so its input shape is unknown"
            )
        placeholder = _placeholder(shape, dtype, module_name(f"{name}_input", taken), where)
        value = Value(placeholder, keras_order(len(placeholder.shape)))
        group_names = weight_group_names([entry["class_name"] for _, entry in body])
        for (index, entry), group in zip(body, group_names, strict=True):
            layer = self.layer_of(entry, _place(where, index), weights.group(group), taken)
            (value,) = self.call(layer, [value], {})
        return L.Functional(
            inputs=placeholder, outputs=self.layouts.keras(value).tensor, name=module_name(name, set())
        )

    def _functional(
        self,
        config: dict[str, Any],
        entries: list[dict[str, Any]],
        weights: WeightGroup,
        where: str,
        name: str,
    ) -> Functional:
        taken: set[str] = set()
        outputs: dict[tuple[str, int], list[Value]] = {}
        pending: list[Node] = []
        group_names = weight_group_names([str(entry["class_name"]) for entry in entries])
        for index, (entry, group) in enumerate(zip(entries, group_names, strict=True)):
            place = _place(where, index)
            layer_name = entry.get("name") or entry["config"].get("name")
            if not isinstance(layer_name, str):
                raise SpecError(place, "has no name")
            if entry["class_name"] == "InputLayer":
                layer_config = entry["config"]
                placeholder = _placeholder(
                    layer_config.get("batch_shape"), _dtype_name(layer_config.get("dtype")),
                    module_name(layer_name, taken), place,
                )  # fmt: skip
                outputs[(layer_name, 0)] = [Value(placeholder, keras_order(len(placeholder.shape)))]
                continue
            layer = self.layer_of(entry, place, weights.group(group), taken)
            nodes = entry.get("inbound_nodes", [])
            if not isinstance(nodes, list) or not all(isinstance(node, dict) for node in nodes):
                raise SpecError(
                    f"{place}.inbound_nodes", "is not a list of nodes (objects with args and kwargs)"
                )
            for node_index, node in enumerate(nodes):
                if not isinstance(node.get("args", []), list) or not isinstance(node.get("kwargs", {}), dict):
                    raise SpecError(
                        f"{place}.inbound_nodes[{node_index}]", "its args are not a list and kwargs an object"
                    )
            layer.calls = len(nodes)
            pending.extend((layer, node_index, node) for node_index, node in enumerate(nodes))
        for layer, node_index, node in _topological(pending, outputs):
            args = _resolve(node.get("args", []), outputs, layer)
            kwargs = _resolve(node.get("kwargs", {}), outputs, layer)
            if not args:  # called by keyword: Dense(3)(inputs=x), LSTM(4)(sequences=x)
                args = [kwargs.pop(key) for key in INPUT_KEYWORDS if key in kwargs][:1]
            outputs[(layer.name, node_index)] = self.call(layer, list(_values(args)), kwargs)
        # A model's own inputs and outputs count a nested functional model's nodes from 1 (Keras gives it
        # a node of its own first); its layers' arguments count them from 0.
        offsets = {
            str(entry.get("name")): 1 for entry in entries if entry["class_name"] in ("Functional", "Model")
        }
        inputs = _structure(config.get("input_layers"), outputs, offsets, where, "input_layers", self.layouts)
        results = _structure(
            config.get("output_layers"), outputs, offsets, where, "output_layers", self.layouts
        )
        return L.Functional(inputs=inputs, outputs=results, name=module_name(name, set()))

    # -- layers -------------------------------------------------------------

    def layer_of(
        self, entry: dict[str, Any], place: str, weights: WeightGroup, taken: set[str] | None = None
    ) -> KerasLayer:
        """The :class:`KerasLayer` of config ``entry`` at ``place`` (also a wrapper's inner layer).

        Its module name is unique within ``taken``: the names of its model so far (none: a model of its own).
        """
        taken = set() if taken is None else taken
        class_name = str(entry["class_name"])
        config = entry["config"]
        name = str(entry.get("name") or config.get("name") or snake_case(class_name))
        trainable = self._trainable and config.get("trainable", True) is not False
        return KerasLayer(
            place, class_name, name, module_name(name, taken), config, weights, trainable=trainable
        )

    def call(
        self, layer: KerasLayer, inputs: list[Value], kwargs: dict[str, Any] | None = None
    ) -> list[Value]:
        """``layer`` (a layer or a nested model) on ``inputs``, with its node's ``kwargs``: its outputs."""
        kwargs = kwargs or {}
        if kwargs.get("mask") is not None:
            raise layer.error("is called with a mask: masking is not supported; pass the padding as lengths")
        layer.node_kwargs = kwargs
        if layer.class_name in MODEL_CLASSES:
            return self._nested(layer, inputs)
        data_format = layer.get("data_format", "channels_last")
        if data_format != "channels_last" and layer.class_name not in LAYOUT_READERS:
            raise layer.error(
                f"data_format={data_format!r} is not supported: save the model channels_last (Keras's default)"
            )
        dtype = layer.dtype
        inputs = [_cast(value, dtype) for value in inputs]
        try:
            result = CONVERTERS[layer.class_name](layer, inputs, self)
        except SpecError:
            raise
        except TorchXError as error:  # a layer refusing its arguments or input: said at the Keras place
            raise layer.error(" ".join(str(error).split())) from error
        except (
            KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError, ZeroDivisionError
        ) as error:  # fmt: skip
            raise layer.error(f"its config cannot be converted ({type(error).__name__}: {error})") from error
        return [result] if isinstance(result, Value) else list(result)

    def _nested(self, layer: KerasLayer, inputs: list[Value]) -> list[Value]:
        """A model used as a layer: converted on its own (its own Functional), called in Keras's layout."""
        entry = {"class_name": layer.class_name, "config": layer.config}
        tensors = [self.layouts.keras(value).tensor for value in inputs]

        def make() -> Functional:
            outer, self._trainable = self._trainable, layer.trainable  # a frozen model freezes its layers
            try:
                return self.model(entry, layer.weights, layer.place)
            finally:
                self._trainable = outer

        results = layer.apply(make, *tensors)
        flat = list(results) if isinstance(results, (list, tuple)) else [results]
        return [Value(tensor, keras_order(len(tensor.shape))) for tensor in flat]


def _cast(value: Value, dtype: torch.dtype) -> Value:
    """``value`` in ``dtype`` if it is floating-point, as Keras casts a layer's floating inputs to the dtype
    it computes in (integer inputs, such as an Embedding's indices, are kept)."""
    source = value
    while source.placeholder is None and source.padding is not None:  # a pending padding keeps its dtype
        source = source.padding.source
    recorded = source.tensor.recorded_dtype  # a conversion decides while it defines the graph
    if not recorded.is_floating_point or recorded == dtype:
        return value
    return value.with_tensor(value.tensor.to(dtype))


def check_entry(entry: dict[str, Any], place: str) -> None:
    """Refuse, as data, any layer entry whose class or objects are not Keras's own built-in ones."""
    class_name = entry.get("class_name")
    if not isinstance(class_name, str) or not isinstance(entry.get("config"), dict):
        raise SpecError(place, "is not a Keras layer entry (a class_name and a config)")
    name = entry.get("name") or entry["config"].get("name") or "?"
    where = f'{place} ({class_name} "{name}")'
    if class_name in ("Lambda", "TFOpLambda"):
        raise SpecError(where, f"Lambda layers are refused: {_CODE_REASON}")
    module, registered = entry.get("module"), entry.get("registered_name")
    if registered not in (None, class_name) or not _keras_module(module):
        raise SpecError(
            where,
            f"is a custom layer (module {module!r}, registered as {registered!r}): custom objects are "
            f"refused, since {_CODE_REASON}",
        )
    if class_name not in CONVERTERS and class_name not in MODEL_CLASSES and class_name != "InputLayer":
        raise unsupported(place, class_name, str(name))
    for key, value in _objects(entry["config"]):
        if not _keras_module(value.get("module")) or value.get("registered_name") not in (
            None,
            value.get("class_name"),
        ):
            shown = value.get("registered_name") or value.get("config") or value.get("class_name")
            raise SpecError(where, f"{key} is a custom object ({shown!r}): refused, since {_CODE_REASON}")
    for key in ("activation", "recurrent_activation"):
        if key in entry["config"] and not isinstance(entry["config"][key], (str, type(None))):
            raise SpecError(where, f"{key} is not a Keras activation's name: refused, since {_CODE_REASON}")


def _keras_module(module: object) -> bool:
    return module is None or (isinstance(module, str) and (module == "keras" or module.startswith("keras.")))


def _objects(value: Any, key: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every serialized object (a dict with a class_name) inside a layer's config, its module checked
    whatever its class name; what is inside it (a wrapped layer's config) is checked where it is converted."""
    if isinstance(value, dict):
        if "class_name" in value and key:
            yield key, value
            return
        for name, item in value.items():
            yield from _objects(item, name)
    elif isinstance(value, list):
        for item in value:
            yield from _objects(item, key)


def _place(where: str, index: int) -> str:
    return f"{where}.layers[{index}]" if where else f"layers[{index}]"


def _dtype_name(dtype: object) -> str:
    if isinstance(dtype, dict):  # a DTypePolicy
        dtype = dtype.get("config", {}).get("name")
    return dtype if isinstance(dtype, str) else "float32"


def _placeholder(shape: object, dtype: str, name: str, where: str) -> Any:
    if not isinstance(shape, list) or not shape or not all(d is None or isinstance(d, int) for d in shape):
        raise SpecError(where, f"the input shape {shape!r} is not a list of sizes (batch first)")
    torch_dtype = dtype_named(dtype)
    if torch_dtype is None:
        raise SpecError(where, f"the input dtype {dtype!r} is not a dtype torch has")
    return L.Placeholder(tuple(shape), dtype=torch_dtype, name=name)


def _is_tensor(value: object) -> bool:
    return isinstance(value, dict) and value.get("class_name") == "__keras_tensor__"


def _reference(value: object, where: str) -> tuple[str, int, int]:
    """A Keras tensor reference ``[layer, node index, tensor index]``, checked."""
    if not (
        isinstance(value, list) and len(value) == 3 and isinstance(value[0], str)
        and all(isinstance(index, int) and not isinstance(index, bool) and index >= 0 for index in value[1:])
    ):  # fmt: skip
        raise SpecError(where, f"{value!r} is not [layer, node index, tensor index]")
    return value[0], value[1], value[2]


def _history(value: dict[str, Any]) -> tuple[str, int, int]:
    config = value.get("config")
    return _reference(config.get("keras_history") if isinstance(config, dict) else None, "keras_history")


def _references(value: Any) -> Iterator[tuple[str, int, int]]:
    if _is_tensor(value):
        yield _history(value)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _references(item)
    elif isinstance(value, list):
        for item in value:
            yield from _references(item)


def _topological(nodes: list[Node], outputs: dict[tuple[str, int], list[Value]]) -> Iterator[Node]:
    """``nodes`` in an order where each comes after the nodes whose outputs it reads, in config order
    wherever the config allows (one pass, however the config orders them: Kahn's algorithm)."""
    producer = {(layer.name, index): position for position, (layer, index, _) in enumerate(nodes)}
    readers: list[list[int]] = [[] for _ in nodes]
    waiting = [0] * len(nodes)
    for position, (layer, _, node) in enumerate(nodes):
        for name, index, _ in _references(node):
            if (name, index) in outputs:
                continue
            if (name, index) not in producer:
                raise layer.error(f"its input {name!r} is produced by no layer of the model")
            readers[producer[(name, index)]].append(position)
            waiting[position] += 1
    ready = [position for position, count in enumerate(waiting) if count == 0]
    heapq.heapify(ready)
    done = 0
    while ready:
        position = heapq.heappop(ready)
        done += 1
        yield nodes[position]
        for reader in readers[position]:
            waiting[reader] -= 1
            if waiting[reader] == 0:
                heapq.heappush(ready, reader)
    if done < len(nodes):
        layer = next(nodes[position][0] for position, count in enumerate(waiting) if count)
        raise layer.error("its inputs depend on its own output (the config's nodes form a cycle)")


def _resolve(value: Any, outputs: dict[tuple[str, int], list[Value]], layer: KerasLayer) -> Any:
    """Node arguments with every Keras tensor replaced by its :class:`Value`."""
    if _is_tensor(value):
        name, node, index = _history(value)
        produced = outputs[(name, node)]
        if index >= len(produced):
            raise layer.error(f"reads output {index} of {name!r}, which has {len(produced)}")
        return produced[index]
    if isinstance(value, dict):
        return {key: _resolve(item, outputs, layer) for key, item in value.items()}
    if isinstance(value, list):
        return [_resolve(item, outputs, layer) for item in value]
    return value


def _values(value: Any) -> Iterator[Value]:
    if isinstance(value, Value):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _values(item)


def _structure(
    spec: object,
    outputs: dict[tuple[str, int], list[Value]],
    offsets: dict[str, int],
    where: str,
    key: str,
    layouts: Layouts,
) -> Any:
    """A model's inputs or outputs (one, a list or a dict) as placeholders in Keras's layout.

    ``offsets``: where a layer's node numbers start here (a nested functional model's: at 1)."""

    def tensor(reference: object) -> Any:
        name, node, index = _reference(reference, f"{where}.{key}" if where else key)
        produced = outputs.get((name, node - offsets.get(name, 0)))
        if produced is None or index >= len(produced):
            raise SpecError(f"{where}.{key}" if where else key, f"no layer produces {reference!r}")
        return layouts.keras(produced[index]).tensor

    if isinstance(spec, dict):
        return {str(name): tensor(reference) for name, reference in spec.items()}
    if isinstance(spec, list) and spec and isinstance(spec[0], str):
        return tensor(spec)
    if isinstance(spec, list) and spec:
        tensors = [tensor(reference) for reference in spec]
        return tensors[0] if len(tensors) == 1 else tensors
    raise SpecError(f"{where}.{key}" if where else key, f"{spec!r} names no tensors")
