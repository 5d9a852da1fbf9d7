"""Device scopes racing other code in one thread: asyncio tasks interleaving
TorchX scopes with ``torch.device(...)`` in every order, and ``os.fork()``
while another thread holds the plugin and placement locks.

The interleavings are checked against a model of torch's (thread-local)
torch-function mode stack: ``torch.device`` pushes its mode on top and its
exit pops whatever is on top (torch's own behaviour); a TorchX scope pushes
its constructor mode once per thread, when it is not on the stack, and its
last close takes off exactly that mode, wherever it is. Every task's
constructors must create where the model says, after every step.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import torch
from report import Report

import torchx
import torchx.nn as nnx
from torchx.core import PluginManager, use_plugins
from torchx.core import _module as scoped_module
from torchx.core import _plugins as plugins
from torchx.core.testing import StaticDeviceBackend, in_forked_child

TORCHX_MODE = "torchx"


@dataclass(frozen=True)
class Actor:
    """One asyncio task: a TorchX scope (``device``, ``dtype``), or, when
    ``device`` is None, ``with torch.device("meta")``."""

    name: str
    device: str | None = None
    dtype: torch.dtype | None = None

    @property
    def token(self) -> str:
        """How the model and the checks name this actor's torch.device mode."""
        return f"torch.device {self.name}"

    def pushes(self, stack: list[str]) -> bool:
        """Whether this TorchX scope changes constructors, given the stack at its opening."""
        return self.device != "cpu" or self.dtype not in (None, torch.float32) or bool(stack)


CAST = {
    "meta and cpu/float64 scopes, one torch.device": (
        Actor("A", "meta"),
        Actor("B"),
        Actor("C", "cpu", torch.float64),
    ),
    "meta and plain cpu scopes, one torch.device": (Actor("A", "meta"), Actor("B"), Actor("C", "cpu")),
    "a cpu/float64 scope, two torch.device": (Actor("A", "cpu", torch.float64), Actor("B"), Actor("D")),
}


def orders(actors: tuple[Actor, ...]) -> Iterator[tuple[tuple[str, str], ...]]:
    """Every interleaving of each actor's open and close (open first)."""
    steps = [(actor.name, action) for actor in actors for action in ("open", "close")]
    seen: set[tuple[tuple[str, str], ...]] = set()
    for order in itertools.permutations(steps):
        if order in seen:
            continue
        seen.add(order)
        if all(order.index((actor.name, "open")) < order.index((actor.name, "close")) for actor in actors):
            yield order


def model(
    actors: tuple[Actor, ...], order: tuple[tuple[str, str], ...]
) -> tuple[list[list[str]], list[dict[str, tuple[str, torch.dtype]]], bool]:
    """The mode stack and what each task's ``nn.Linear`` is made on, after each
    step; and whether torch's pop-the-top exit took TorchX's mode."""
    by_name = {actor.name: actor for actor in actors}
    stack: list[str] = []
    beneath: list[str] = []  # beneath TorchX's mode when it was pushed
    open_scopes: set[str] = set()  # the TorchX scopes open, that pushed
    inside: set[str] = set()
    stacks, made, torch_popped_ours = [], [], False

    def remove_orphan() -> None:  # what the exit that popped TorchX's mode left behind
        for index in range(len(stack) - 1, -1, -1):
            if stack[index] in beneath:
                del stack[index]
                return

    for name, action in order:
        actor = by_name[name]
        if actor.device is None:  # torch.device("meta"): pushes on top, its exit pops the top
            if action == "open":
                stack.append(actor.token)
            else:
                torch_popped_ours |= stack.pop() == TORCHX_MODE
        elif action == "open":
            if actor.pushes(stack):
                if TORCHX_MODE not in stack:
                    if open_scopes:
                        remove_orphan()
                    beneath = list(stack)
                    stack.append(TORCHX_MODE)
                open_scopes.add(name)
        elif name in open_scopes:
            open_scopes.discard(name)
            if not open_scopes:
                if TORCHX_MODE in stack:
                    stack.remove(TORCHX_MODE)
                else:
                    remove_orphan()
                beneath = []
        (inside.add if action == "open" else inside.discard)(name)
        stacks.append(list(stack))
        made.append({actor.name: _construct(actor, actor.name in inside, stack) for actor in actors})
    return stacks, made, torch_popped_ours


def _construct(actor: Actor, inside: bool, stack: list[str]) -> tuple[str, torch.dtype]:
    """Where a constructor called by ``actor`` creates: the modes run top first,
    each filling in what the call (or a mode above) left unset."""
    device: str | None = None
    dtype: torch.dtype | None = None
    for mode in reversed(stack):
        if mode != TORCHX_MODE:  # a torch.device("meta")
            device = device or "meta"
        elif inside and actor.device is not None:  # the TorchX mode, in a task with a scope open
            device = device or actor.device
            dtype = dtype or actor.dtype
    return device or "cpu", dtype or torch.float32


def run(
    actors: tuple[Actor, ...], order: tuple[tuple[str, str], ...]
) -> tuple[list[list[str]], list[dict[str, tuple[str, torch.dtype]]]]:
    """Run ``order`` with one asyncio task per actor; after each step, the
    stack (modes named as the model names them) and what every task's
    ``nn.Linear`` is made on, in its own context."""
    scopes = {a.name: torchx.device_scope(a.device, dtype=a.dtype) for a in actors if a.device is not None}
    names: dict[int, str] = {id(torchx.core._scope._thread.mode): TORCHX_MODE}
    stacks: list[list[str]] = []
    made: list[dict[str, tuple[str, torch.dtype]]] = [{} for _ in order]

    def stack() -> list[str]:
        depth = torch._C._len_torch_function_stack()
        return [names.get(id(torch._C._get_function_stack_at(i)), "?") for i in range(depth)]

    async def task(actor: Actor, barrier: asyncio.Barrier) -> None:
        context: Any = scopes.get(actor.name) or torch.device("meta")
        for index, (name, action) in enumerate(order):
            if name == actor.name and action == "open":  # the step is this task's
                context.__enter__()
                if actor.device is None:
                    top = torch._C._get_function_stack_at(torch._C._len_torch_function_stack() - 1)
                    names[id(top)] = actor.token
            elif name == actor.name:
                context.__exit__(None, None, None)
            await barrier.wait()  # the step is done
            if actor is actors[0]:
                stacks.append(stack())
            weight = torch.nn.Linear(2, 3).weight
            made[index][actor.name] = (weight.device.type, weight.dtype)
            await barrier.wait()  # every task has looked

    async def together() -> None:
        barrier = asyncio.Barrier(len(actors))
        await asyncio.gather(*(task(actor, barrier) for actor in actors))

    asyncio.run(together())
    return stacks, made


@pytest.fixture
def meta_and_cpu() -> Iterator[PluginManager]:
    manager = PluginManager(load_entry_points=False)
    manager.register(
        StaticDeviceBackend({"meta": torch.device("meta"), "cpu": torch.device("cpu")}), "static"
    )
    with use_plugins(manager):
        yield manager


@pytest.mark.parametrize("cast", sorted(CAST))
def test_asyncio_tasks_interleaving_scopes_and_torch_device_in_every_order(
    cast: str, meta_and_cpu: PluginManager, report: Report
) -> None:
    actors = CAST[cast]
    depth = torch._C._len_torch_function_stack()
    checked = torch_pops = 0
    for order in orders(actors):
        want_stacks, want_made, torch_popped_ours = model(actors, order)
        try:
            stacks, made = run(actors, order)
        finally:  # a failure must not leave modes behind for the next order
            while torch._C._len_torch_function_stack() > depth:
                torch._C._pop_torch_function_stack()
        assert stacks == want_stacks, order
        assert made == want_made, order
        assert stacks[-1] == [], order  # the race ends clean, whoever popped what
        assert torchx.current_scope() is None and not torchx.core._scope.OPEN_SCOPES
        checked += 1
        torch_pops += torch_popped_ours
    assert checked == 90 and torch_pops > 0  # some orders have torch.device's exit pop TorchX's mode
    report.count("thread", f"asyncio scope interleavings ({cast})", checked)


def test_the_reported_order_a_scope_closing_under_another_tasks_torch_device(
    meta_and_cpu: PluginManager, report: Report
) -> None:
    """Task A opens a TorchX scope, task B enters ``torch.device("meta")``, A
    closes first: B's "meta" ``nn.Linear(2**14, 2**14)`` (1 GiB if real) must
    still be on meta. A small Linear stands in; its device is what counts."""
    actors = (Actor("A", "cpu", torch.float64), Actor("B"))
    order = (("A", "open"), ("B", "open"), ("A", "close"), ("B", "close"))
    stacks, made = run(actors, order)
    assert made[2]["B"] == ("meta", torch.float32)
    assert stacks[-1] == []
    report.count("thread", "asyncio scope interleavings (the reported order)")


# -- os.fork() while another thread holds a lock --------------------------------


class _Net(nnx.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork here")
def test_a_fork_while_another_thread_holds_the_plugin_and_placement_locks_finishes_in_the_child(
    report: Report,
) -> None:
    manager = PluginManager()  # entry points not loaded yet: the child loads them
    held_by_thread = (manager._lock, plugins._default_lock, scoped_module._PLACE_LOCK)
    holding, done = threading.Event(), threading.Event()

    def hold() -> None:
        for lock in held_by_thread:
            lock.acquire()
        holding.set()
        done.wait(60)
        for lock in reversed(held_by_thread):
            lock.release()

    def child() -> None:
        with use_plugins(manager), torchx.device_scope("cpu", dtype=torch.float64):  # loads the plugins
            net = _Net()
            out = net(torch.ones(3, 4))  # placed under the placement lock
        assert (out.dtype, net.fc.weight.dtype) == (torch.float64, torch.float64)
        assert "torchx-device" in manager.plugin_names()
        plugins._default = None  # the next call takes the default lock
        assert plugins.current_plugins() is not None

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    assert holding.wait(10)
    try:
        problem = in_forked_child(child)
    finally:
        done.set()
        holder.join(10)
    assert problem == ""
    report.count("thread", "forks while another thread holds the plugin and placement locks")
