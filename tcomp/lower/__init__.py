"""Lowering: schedule -> loop-nest IR (``tc.lower``).

The steps, in order:

1. ``check_schedule``   placements and bindings that cannot be lowered at all
2. ``BoundInference``   the region, loops and storage of every stage
3. ``NestBuilder``      one kernel per root stage, everything placed inside it (the
                        order within a loop body: ``loop_body``, which the
                        polyhedral model shares)
4. ``KERNEL_PASSES``    launch sizes, guards for bound loops, loop partitioning at
                        guards (``partition``), index simplification, matrix
                        instructions (``tensorize``, ``warpgroup``, ``fragments``),
                        unrolled loops of one iteration dropped

``lower(s, trace=print)`` prints the IR after every step.
"""

from __future__ import annotations

from ..errors import ScheduleError
from ..ir.expr import Load
from ..ir.stmt import BoxCopy, Buffer, Kernel, Program, Store
from ..ir.visitor import walk
from ..lang.tensor import Tensor
from ..target import get_target
from ..target.instructions import instruction_family
from .bounds import BoundInference, check_bindings
from .nest import NestBuilder
from .passes import KERNEL_PASSES


def _root_of(stage) -> object:
    seen = set()
    while stage.attach.kind in ("at", "reverse_at"):
        if stage in seen:
            raise ScheduleError(f"the placement of {stage.name} is circular")
        seen.add(stage)
        stage = stage.attach.stage
    return stage


def check_schedule(s, target=None) -> dict:
    """Placement errors that no lowering could get around, and matrix instructions that
    ``target`` (default: ``DEFAULT_TARGET``) lacks; returns stage -> kernel root."""
    _check_instructions(s, get_target(target))
    kernel_of = {}
    for st in s.stages:
        if st.attach.kind == "inline":
            continue
        root = _root_of(st)
        if root.attach.kind == "inline":
            raise ScheduleError(f"{st.name} is placed inside {root.name}, which is inlined")
        kernel_of[st] = root
        if st.attach.kind in ("at", "reverse_at") and st.attach.axis not in st.attach.stage.leaf_vars:
            host = st.attach.stage
            verb = "compute_at" if st.attach.kind == "at" else "reverse_compute_at"
            raise ScheduleError(
                f"{st.name} is placed at {host.name}.{st.attach.axis.name} ({verb} at {st.attach.site}), "
                f"which is no longer a loop of {host.name}: a later split or fuse replaced it; "
                f"{host.name}'s loops are now {', '.join(v.name for v in host.leaf_vars)}")
        if st.attach.kind == "root" and st.scope in ("shared", "local"):
            raise ScheduleError(
                f"{st.name} lives in {st.scope} memory but is computed at root; place it inside a "
                f"kernel with s[{st.name!r}].compute_at(consumer_stage, loop)")
    check_bindings(s, kernel_of)
    return kernel_of


def _check_instructions(s, target) -> None:
    """Refuse a ``tensorize`` onto an instruction family the target does not have."""
    for st in s.stages:
        for kind in st.annotations.values():
            if not kind.startswith("tensorize"):
                continue
            intrinsic = kind.partition(".")[2] or "mma_m16n8k16"
            family = instruction_family(intrinsic)
            if family not in target.matrix_instructions:
                raise ScheduleError(f"{st.name} is tensorized onto {intrinsic}, which the {target.name} does not "
                                    f"have ({target.description}); it has "
                                    f"{', '.join(target.matrix_instructions)}")


def lower(s, trace=None, passes=KERNEL_PASSES, target=None) -> Program:
    """The loop-nest IR of a schedule for ``target`` (a name or ``tcomp.target.Target``;
    default ``DEFAULT_TARGET``); ``print(tc.lower(s))`` shows it. ``passes``: the kernel
    passes to run (``()`` gives the nests as built, which the polyhedral model mirrors)."""
    kernel_of = check_schedule(s, target)
    bounds = BoundInference(s)
    for st in kernel_of:
        bounds.layout(st)
    global_buffers: dict = {p: Buffer(p.name, p.dtype, p.shape, "global") for p in s.placeholders}
    for st, layout in bounds.layouts.items():
        if layout.scope == "global":
            global_buffers[st.tensor] = layout.buffer
    builder = NestBuilder(s, bounds.layouts, global_buffers)
    inputs = tuple(global_buffers[p] for p in sorted(s.placeholders, key=lambda t: t.op.order))
    outputs = tuple(global_buffers[t] for t in s.outputs)
    kernels = []
    for st in s.stages:
        if st.attach.kind != "root":
            continue
        body = builder.stage_stmt(st)
        kernel = Kernel(f"k_{st.name}", _params(body, inputs + outputs), body, tensor_maps=_tensor_maps(body))
        if trace:
            trace(f"# after building the nest of {st.name}\n{kernel}")
        for name, fn in passes:
            kernel = fn(kernel)
            if trace:
                trace(f"# after {name}\n{kernel}")
        kernels.append(kernel)
    intermediates = tuple(b for t, b in global_buffers.items()
                          if b not in inputs and b not in outputs and isinstance(t, Tensor)
                          and any(b in k.params for k in kernels))
    return Program(tuple(kernels), inputs, outputs, intermediates)


def _params(body, order) -> tuple:
    """The global buffers ``body`` reads or writes (a TMA copy reads its map's tensor),
    those of ``order`` first, in its order."""
    used = []
    for node in walk(body):
        buf = node.buffer if isinstance(node, (Load, Store)) else None
        if isinstance(node, BoxCopy):
            buf = node.tensor_map.tensor
        if buf is not None and buf.scope == "global" and buf not in used:
            used.append(buf)
    ordered = [b for b in order if b in used] + [b for b in used if b not in order]
    return tuple(ordered)


def _tensor_maps(body) -> tuple:
    """The TensorMaps of ``body``'s TMA copies, each once, in the order of their first copy."""
    maps = []
    for node in walk(body):
        if isinstance(node, BoxCopy) and node.tensor_map not in maps:
            maps.append(node.tensor_map)
    return tuple(maps)


__all__ = ["lower", "check_schedule"]
