"""Which reductions of a workload the tensor-core rules take, and why not where they do not:
the lines ``tcomp autoschedule`` and ``tcomp explain`` print, so that a product that runs
on the CUDA cores says so instead of falling back silently."""

from __future__ import annotations

from ...ir.expr import Binary, Cast
from ...lang.tensor import Reduce, TensorRead
from ...lower.thread_reduction import WARP
from ...target.instructions import MATRIX_OPERAND_DTYPES
from ..kernels import Group
from ..stages import matrix_product_operands
from .mma_rows import MmaRows
from .mma_sync import MmaTiling
from .skinny import SKINNY_ROWS, SkinnyProduct, streamed_lanes
from .weight_rows import MAX_ROW_LANES, WeightRows, weight_rows_product

#: the smallest output the tensor-core tilings take: 9 rows (a 16-row block of mma.sync
#: warp tiles, its rows past the output's zero-filled: ``mma_sync.rows_fit``) by 32 columns
SMALLEST_BLOCK = (9, 32)


def tensor_core_notes(space) -> list:
    """One line per sum of products in ``space``'s algorithm: the tensor-core rules that
    take it, or why none does (the operands' types, their layout, the target, the shape)."""
    notes = []
    for name, info in space.stages.items():
        body = info.op.body
        if not (isinstance(body, Reduce) and body.combiner == "sum" and isinstance(body.source, Binary)
                and body.source.op == "*"):
            continue
        notes.append(f"{name}: {_verdict(space, name)}")
    return notes


def _verdict(space, name: str) -> str:
    info = space.stages[name]
    op = info.op
    instructions = space.target.matrix_instructions
    if not instructions:
        return f"on the CUDA cores: the {space.target.name} has no matrix instructions"
    dtypes = [_read_dtype(f) for f in (op.body.source.a, op.body.source.b)]
    if op.output.dtype != "float32" or dtypes[0] != dtypes[1] or dtypes[0] not in MATRIX_OPERAND_DTYPES:
        shown = " and ".join(str(d) for d in dtypes)
        return (f"on the CUDA cores: the tensor-core rules take two {' or '.join(MATRIX_OPERAND_DTYPES)} operands "
                f"summed in float32; {name} multiplies {shown} into {op.output.dtype}")
    if matrix_product_operands(op, any_layout=True) is None:
        return (f"on the CUDA cores: the tensor-core rules take C[i, j] = sum a[i, k] * b[k, j] (or b[j, k]), with "
                f"one batch axis at most; {name} reads its operands otherwise")
    group = Group(name, (), space.stages)
    rules = [rule.name for rule in space.rules_for(group) if space.valid_params(rule, group)]
    taken = [r for r in rules if r in ("mma_tiling", "wgmma_tiling", MmaRows.name, SkinnyProduct.name, WeightRows.name)]
    M, N = info.shape[-2:]
    K = op.reduce_axis[0].extent
    if taken:
        return "offered to " + ", ".join(taken)
    # NOTE: a K under one instruction's k step (16) is no reason: the tilings pad it with zeros
    if M < SMALLEST_BLOCK[0] or N < SMALLEST_BLOCK[1]:
        skinny = "; " + _decode_rules_take(group) if M <= SKINNY_ROWS else ""
        return (f"on the CUDA cores: the output ({M} x {N}) is under the smallest tensor-core block "
                f"({SMALLEST_BLOCK[0]} x {SMALLEST_BLOCK[1]}){skinny}")
    return (f"on the CUDA cores: no {MmaTiling.name} or wgmma_tiling point fits the {space.target.name}'s limits at "
            f"{M} x {N} x {K}")


def _decode_rules_take(group: Group) -> str:
    """What the decode-step rule for the product's layout of W needs."""
    found = weight_rows_product(group)
    if found is None:
        return f"{SkinnyProduct.name} takes up to {SKINNY_ROWS} rows, N a multiple of 8 and K of at least 128"
    product, _, w = found
    lanes = streamed_lanes(group.stages[product].op, w)
    if lanes == 1:
        return f"{WeightRows.name} (W stored [N, K]) reads W's rows in vectors: K must be even"
    return (f"{WeightRows.name} (W stored [N, K]) takes up to {MAX_ROW_LANES // lanes} rows, {lanes} values of k "
            f"a 16-byte load and K a multiple of {WARP * lanes} (a warp's load)")


def _read_dtype(factor) -> str | None:
    while isinstance(factor, Cast):
        factor = factor.value
    return factor.tensor.dtype if isinstance(factor, TensorRead) else None


__all__ = ["tensor_core_notes"]
