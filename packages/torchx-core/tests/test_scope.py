"""device_scope: resolution through backends, constructors, nesting, threads and tasks."""

from __future__ import annotations

import asyncio
import threading

import pytest
import torch
from fake_backend import FakeBackend

import torchx
from torchx.core import (
    ArgumentError,
    DeviceError,
    DeviceWarning,
    Placement,
    PluginManager,
    PluginWarning,
    TorchXError,
    hookimpl,
    use_plugins,
)


def mode_depth() -> int:
    return int(torch._C._len_torch_function_stack())


def test_a_scope_resolves_its_id_through_the_backend_once(backend: FakeBackend) -> None:
    first = torchx.device_scope("void")
    second = torchx.device_scope("void")
    assert first.placement is second.placement
    assert backend.asked == ["void"]
    assert first.device == torch.device("meta")
    assert repr(first) == "DeviceScope('void' -> meta)"


def test_ids_that_compare_equal_but_differ_in_type_are_resolved_separately(backend: FakeBackend) -> None:
    class Picky:
        @hookimpl
        def torchx_resolve_device(self, device_id: object) -> Placement | None:
            return (
                Placement(torch.device("meta" if device_id is True else "cpu"))
                if device_id in (1, True)
                else None
            )

    manager = PluginManager(load_entry_points=False)
    manager.register(Picky(), "picky")
    with use_plugins(manager):
        assert torchx.device_scope(True).device.type == "meta"
        assert torchx.device_scope(1).device.type == "cpu"


def test_constructors_in_a_scope_create_on_its_device(backend: FakeBackend) -> None:
    with torchx.device_scope("void"):
        made = [
            torch.zeros(2, 3),
            torch.ones(2),
            torch.empty(4),
            torch.randn(3),
            torch.arange(5),
            torch.full((2,), 7.0),
            torch.tensor([1.0, 2.0]),
            torch.eye(3),
            torch.linspace(0, 1, 5),
            torch.nn.Linear(3, 4).weight,
        ]
        explicit = torch.zeros(2, device="cpu")
        scoped_empty = torch.empty(0)
    assert {tensor.device.type for tensor in made} == {"meta"}
    assert explicit.device.type == "cpu"
    assert scoped_empty.new_ones((3, 6)).device.type == "meta"  # new_* follows its tensor
    assert torch.zeros(2).device.type == "cpu"  # the scope is over


def test_like_and_new_functions_follow_their_input_not_the_scope(backend: FakeBackend) -> None:
    on_cpu = torch.ones(3)
    with torchx.device_scope("void"):
        assert torch.zeros_like(on_cpu).device.type == "cpu"
        assert torch.ones_like(on_cpu).device.type == "cpu"
        assert on_cpu.new_zeros(2).device.type == "cpu"
        assert torch.randn_like(on_cpu).device.type == "cpu"


def test_a_scope_dtype_applies_where_torch_would_use_its_default_float(backend: FakeBackend) -> None:
    with torchx.device_scope("here", dtype=torch.float64):
        assert torch.zeros(2).dtype == torch.float64
        assert torch.randn(2).dtype == torch.float64
        assert torch.tensor([1.5]).dtype == torch.float64
        assert torch.tensor([0.1]).item() == 0.1  # made in float64, not rounded through float32
        assert torch.full((2,), 1.0).dtype == torch.float64
        assert torch.arange(0.0, 1.0, 0.25).dtype == torch.float64
        assert torch.nn.Linear(2, 2).weight.dtype == torch.float64
        assert torch.tensor([1, 2]).dtype == torch.int64
        assert torch.arange(3).dtype == torch.int64
        assert torch.full((2,), True).dtype == torch.bool
        assert torch.zeros(2, dtype=torch.float16).dtype == torch.float16
        assert torch.as_tensor(torch.ones(2, dtype=torch.float32)).dtype == torch.float32
    assert torch.zeros(2).dtype == torch.float32


def test_a_scope_that_changes_nothing_pushes_no_mode(backend: FakeBackend) -> None:
    depth = mode_depth()
    with torchx.device_scope("here"):
        assert mode_depth() == depth
        with torchx.device_scope("here", dtype=torch.float32):  # torch's default dtype: still nothing
            assert mode_depth() == depth
    with torchx.device_scope("void"):
        assert mode_depth() == depth + 1
        with torchx.device_scope("void"):
            assert mode_depth() == depth + 1  # one mode per thread, however deep
    assert mode_depth() == depth


def test_nested_scopes_restore_the_outer_one(backend: FakeBackend) -> None:
    with torchx.device_scope("void") as outer:
        assert torchx.current_scope() is outer
        with torchx.device_scope("here", dtype=torch.float64) as inner:
            assert torchx.current_scope() is inner
            assert torch.zeros(1).device.type == "cpu"
            assert torch.zeros(1).dtype == torch.float64
        assert torchx.current_scope() is outer
        assert torch.zeros(1).device.type == "meta"
        assert torch.zeros(1).dtype == torch.float32  # an inner scope replaces the outer one whole
    assert torchx.current_scope() is None


def test_an_exception_inside_a_scope_restores_everything(backend: FakeBackend) -> None:
    depth = mode_depth()
    with pytest.raises(KeyError), torchx.device_scope("void"):
        raise KeyError("boom")
    assert torchx.current_scope() is None
    assert mode_depth() == depth
    assert torch.zeros(1).device.type == "cpu"


def test_one_scope_object_is_reusable_and_reentrant(backend: FakeBackend) -> None:
    scope = torchx.device_scope("void")
    for _ in range(2):
        with scope:
            with scope:
                assert torch.zeros(1).is_meta
            assert torchx.current_scope() is scope
    assert torchx.current_scope() is None
    assert torch.zeros(1).device.type == "cpu"


def test_closing_a_scope_that_is_not_innermost_is_an_error(backend: FakeBackend) -> None:
    outer, inner = torchx.device_scope("void"), torchx.device_scope("here")
    outer.__enter__()
    inner.__enter__()
    with pytest.raises(TorchXError, match="close scopes innermost first"):
        outer.__exit__(None, None, None)
    inner.__exit__(None, None, None)
    outer.__exit__(None, None, None)
    assert torchx.current_scope() is None


def test_threads_each_see_their_own_scope(backend: FakeBackend) -> None:
    ids = ["void", "here"] * 4
    dtypes = [torch.float64, torch.float16, None, torch.bfloat16] * 2
    scopes = [
        torchx.device_scope(device_id, dtype=dtype) for device_id, dtype in zip(ids, dtypes, strict=True)
    ]
    barrier = threading.Barrier(len(ids))
    seen: dict[int, tuple[object, str, torch.dtype]] = {}
    errors: list[BaseException] = []

    def work(index: int) -> None:
        try:
            with scopes[index]:
                barrier.wait()  # every thread is inside its own scope at once
                for _ in range(50):
                    tensor = torch.zeros(2)
                    scope = torchx.current_scope()
                    assert scope is not None and scope.device_id == ids[index]
                seen[index] = (scope.device_id, tensor.device.type, tensor.dtype)
                barrier.wait()
        except BaseException as error:  # noqa: BLE001 - re-raised in the main thread
            errors.append(error)
            barrier.abort()

    threads = [threading.Thread(target=work, args=(index,)) for index in range(len(ids))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    for index, device_id in enumerate(ids):
        expected_type = "meta" if device_id == "void" else "cpu"
        assert seen[index] == (device_id, expected_type, dtypes[index] or torch.float32)
    assert torchx.current_scope() is None


def test_asyncio_tasks_each_see_their_own_scope_across_awaits(backend: FakeBackend) -> None:
    async def task(device_id: str, gate: asyncio.Event, other: asyncio.Event) -> list[str]:
        seen = []
        with torchx.device_scope(device_id):
            seen.append(torch.zeros(1).device.type)
            other.set()
            await gate.wait()  # the other task runs inside its own scope meanwhile
            seen.append(torch.zeros(1).device.type)
            scope = torchx.current_scope()
            assert scope is not None and scope.device_id == device_id
        return seen

    async def both() -> tuple[list[str], list[str]]:
        first_ran, second_ran = asyncio.Event(), asyncio.Event()
        return tuple(
            await asyncio.gather(task("void", second_ran, first_ran), task("here", first_ran, second_ran))
        )  # type: ignore[return-value]

    meta_task, cpu_task = asyncio.run(both())
    assert meta_task == ["meta", "meta"]
    assert cpu_task == ["cpu", "cpu"]
    assert torchx.current_scope() is None
    assert torch.zeros(1).device.type == "cpu"


def test_torch_compile_inside_a_scope_creates_on_its_device_and_dtype(backend: FakeBackend) -> None:
    torch._dynamo.reset()

    def make(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x.sin(), torch.ones(3)

    compiled = torch.compile(make, fullgraph=True, backend="eager")
    with torchx.device_scope("here", dtype=torch.float64):
        assert compiled(torch.zeros(3))[1].dtype == torch.float64
    with torchx.device_scope("here", dtype=torch.float16):
        assert compiled(torch.zeros(3))[1].dtype == torch.float16  # guarded: recompiled for this scope
    with torchx.device_scope("void"):
        assert compiled(torch.zeros(3))[1].is_meta
    assert compiled(torch.zeros(3))[1].dtype == torch.float32
    torch._dynamo.reset()


def test_a_non_floating_dtype_is_refused(backend: FakeBackend) -> None:
    with pytest.raises(ArgumentError, match=r"floating torch.dtype .*got torch.int64"):
        torchx.device_scope("here", dtype=torch.int64)
    with pytest.raises(ArgumentError, match="got 'float64'"):
        torchx.device_scope("here", dtype="float64")  # type: ignore[arg-type]


def test_an_absent_device_raises_or_falls_back_with_a_warning(backend: FakeBackend) -> None:
    with pytest.raises(torchx.DeviceUnavailableError, match="'absent'"):
        torchx.device_scope("absent")
    with pytest.warns(DeviceWarning, match=r"'absent' names a device .* using 'here' instead"):
        scope = torchx.device_scope("absent", fallback="here")
    assert scope.device == torch.device("cpu")
    assert scope.device_id == "absent"


def test_fallback_never_hides_a_malformed_id(backend: FakeBackend) -> None:
    with pytest.raises(DeviceError, match="malformed"):
        torchx.device_scope("broken", fallback="here")


def test_an_id_no_backend_accepts_names_the_backends_asked(backend: FakeBackend) -> None:
    with pytest.raises(DeviceError, match=r"'tpu:0' is not one .*asked: fake-backend"):
        torchx.device_scope("tpu:0")


def test_without_any_backend_the_error_says_what_to_install() -> None:
    with (
        use_plugins(PluginManager(load_entry_points=False)),
        pytest.raises(DeviceError, match="pip install torchx-device"),
    ):
        torchx.device_scope("cpu")


def test_a_failing_backend_is_reported_and_the_next_one_is_asked(backend: FakeBackend) -> None:
    class Crashes:
        @hookimpl
        def torchx_resolve_device(self, device_id: object) -> Placement | None:
            raise RuntimeError("backend bug")

    class WrongType:
        @hookimpl
        def torchx_resolve_device(self, device_id: object) -> object:
            return "cpu"

    manager = torchx.core.current_plugins()
    manager.register(Crashes(), "crashes")
    manager.register(WrongType(), "wrong-type")
    with pytest.warns(PluginWarning) as caught:
        scope = torchx.device_scope("void")
    assert scope.device.type == "meta"
    messages = sorted(str(warning.message) for warning in caught)
    assert "'crashes' failed (torchx_resolve_device): RuntimeError: backend bug" in messages[0]
    assert "'wrong-type' failed (torchx_resolve_device): returned str, expected a Placement" in messages[1]


def test_a_later_backend_takes_over_an_id(backend: FakeBackend) -> None:
    class Override:
        @hookimpl
        def torchx_resolve_device(self, device_id: object) -> Placement | None:
            return Placement(torch.device("meta")) if device_id == "here" else None

    torchx.core.current_plugins().register(Override(), "override")
    assert torchx.device_scope("here").device.type == "meta"


def test_build_inside_a_scope_builds_on_its_device_and_dtype(backend: FakeBackend) -> None:
    from toy_layers import Dense

    with torchx.device_scope("here", dtype=torch.float64):
        layer = torchx.build(Dense(4), (None, 3))
        from_tensor = torchx.build(Dense(4), torch.zeros(2, 3, dtype=torch.float32))
        remembered = Dense(4).to("cpu")  # remembered for the build: the scope's dtype is not
    assert layer.weight.dtype == torch.float64
    assert from_tensor.weight.dtype == torch.float32  # a floating input's dtype comes first
    assert remembered(torch.zeros(2, 3)).dtype == torch.float32
    with torchx.device_scope("void"):
        meta_layer = torchx.build(Dense(4), (None, 3))
    assert meta_layer.weight.is_meta


def test_a_context_copied_into_another_thread_sees_no_scope(backend: FakeBackend) -> None:
    async def main() -> tuple[object, str]:
        with torchx.device_scope("void"):
            return await asyncio.to_thread(lambda: (torchx.current_scope(), torch.zeros(1).device.type))

    scope, device_type = asyncio.run(main())
    assert scope is None  # the frame belongs to the thread that opened it...
    assert device_type == "cpu"  # ...as the constructor mode does


def test_a_task_that_outlives_its_scope_sees_it_closed(backend: FakeBackend) -> None:
    async def main() -> tuple[object, str]:
        with torchx.device_scope("void"):
            task = asyncio.get_running_loop().create_task(later())
        return await task

    async def later() -> tuple[object, str]:
        await asyncio.sleep(0)
        return torchx.current_scope(), torch.zeros(1).device.type

    assert asyncio.run(main()) == (None, "cpu")


def test_closing_a_scope_that_is_not_open_here_says_so(backend: FakeBackend) -> None:
    with pytest.raises(TorchXError, match="is not open in this thread or task"):
        torchx.device_scope("void").__exit__(None, None, None)


def test_arrays_and_tensors_keep_their_dtype_in_a_dtype_scope(backend: FakeBackend) -> None:
    numpy = pytest.importorskip("numpy", reason="needs numpy: pip install numpy (in the test extra)")
    array = numpy.ones(3, dtype=numpy.float32)
    with torchx.device_scope("here", dtype=torch.float64):
        assert torch.as_tensor(array).dtype == torch.float32
        assert torch.tensor(data=array).dtype == torch.float32
        assert torch.asarray(array).dtype == torch.float32
        assert torch.tensor(data=[0.5]).dtype == torch.float64


def test_an_id_whose_meaning_can_change_is_resolved_each_time(backend: FakeBackend) -> None:
    answers = iter(["cpu", "meta"])

    class Current:
        @hookimpl
        def torchx_resolve_device(self, device_id: object) -> Placement | None:
            return Placement(torch.device(next(answers)), cache=False) if device_id == "current" else None

    torchx.core.current_plugins().register(Current(), "current")
    assert torchx.device_scope("current").device.type == "cpu"
    assert torchx.device_scope("current").device.type == "meta"


def test_opening_and_closing_scopes_does_not_recompile(backend: FakeBackend) -> None:
    import torchx.nn as nnx

    torch._dynamo.reset()
    graphs: list[object] = []

    def counting(graph: torch.fx.GraphModule, example: object) -> object:
        graphs.append(graph)
        return graph.forward

    class Net(nnx.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(3, 3)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.fc(x)

    compiled = torch.compile(Net(), fullgraph=True, backend=counting)
    compiled(torch.zeros(2, 3))
    with torchx.device_scope("here"):
        compiled(torch.zeros(2, 3))
        with torchx.device_scope("here"):
            compiled(torch.zeros(2, 3))
    compiled(torch.zeros(2, 3))
    assert len(graphs) == 1
    torch._dynamo.reset()


def test_closing_a_scope_in_one_task_leaves_another_tasks_torch_device_alone(backend: FakeBackend) -> None:
    """Task A's scope pushes TorchX's mode, task B then enters ``torch.device("meta")``
    (on top of it: the stack is the thread's), and A closes its scope first: A
    must take off its own mode, not B's device mode."""

    async def scoped(opened: asyncio.Event, may_close: asyncio.Event, closed: asyncio.Event) -> None:
        with torchx.device_scope("here", dtype=torch.float64):
            opened.set()
            await may_close.wait()
        closed.set()

    async def with_torch_device(opened: asyncio.Event, entered: asyncio.Event, closed: asyncio.Event) -> str:
        await opened.wait()
        with torch.device("meta"):
            entered.set()
            await closed.wait()  # the other task's scope is closed meanwhile
            return str(torch.nn.Linear(2, 3).weight.device)

    async def both() -> str:
        opened, entered, closed = asyncio.Event(), asyncio.Event(), asyncio.Event()
        _, device = await asyncio.gather(
            scoped(opened, entered, closed), with_torch_device(opened, entered, closed)
        )
        return device

    depth = mode_depth()
    assert asyncio.run(both()) == "meta"
    assert mode_depth() == depth
    assert torch.zeros(1).device.type == "cpu"


def test_a_torch_device_exit_that_pops_the_scopes_mode_is_repaired_by_the_next_scope_change(
    backend: FakeBackend,
) -> None:
    """``torch.device``'s exit pops whatever is on top: left (in another task)
    after a scope opened above it, it takes TorchX's mode off and leaves its
    own. The next scope opening in the thread takes that one off and pushes
    TorchX's again; the last closing leaves the stack as it began."""
    depth = mode_depth()
    outer = torchx.device_scope("void")
    other_tasks_device = torch.device("meta")
    other_tasks_device.__enter__()
    outer.__enter__()
    other_tasks_device.__exit__(None, None, None)  # torch pops TorchX's mode, its own stays
    assert mode_depth() == depth + 1
    with torchx.device_scope("here", dtype=torch.float64):
        assert mode_depth() == depth + 1  # torch.device's leftover off, TorchX's mode on
        made = torch.zeros(1)
        assert (made.device.type, made.dtype) == ("cpu", torch.float64)
    assert torch.zeros(1).device.type == "meta"  # the outer scope again
    outer.__exit__(None, None, None)
    assert mode_depth() == depth
    assert torch.zeros(1).device.type == "cpu"


def test_the_last_closing_takes_off_what_torch_device_left_behind(backend: FakeBackend) -> None:
    depth = mode_depth()
    scope = torchx.device_scope("void")
    other_tasks_device = torch.device("meta")
    other_tasks_device.__enter__()
    scope.__enter__()
    other_tasks_device.__exit__(None, None, None)  # torch pops TorchX's mode, its own stays
    scope.__exit__(None, None, None)
    assert mode_depth() == depth
    assert torch.zeros(1).device.type == "cpu"


def test_a_mode_entered_inside_a_scope_and_left_open_survives_the_scope(backend: FakeBackend) -> None:
    """A mode pushed above TorchX's (another task's, or a mode closed out of
    order) stays on the stack when the scope closes; TorchX's mode goes."""

    class Marker(torch.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            return func(*args, **(kwargs or {}))

    depth = mode_depth()
    marker = Marker()
    scope = torchx.device_scope("void")
    scope.__enter__()
    marker.__enter__()  # type: ignore[no-untyped-call]
    scope.__exit__(None, None, None)
    assert mode_depth() == depth + 1
    assert torch._C._get_function_stack_at(depth) is marker
    assert torch.zeros(1).device.type == "cpu"
    marker.__exit__(None, None, None)  # type: ignore[no-untyped-call]
    assert mode_depth() == depth
