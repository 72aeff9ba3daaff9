"""What the search space knows of the algorithm's compute stages: each one's shape, the
stages that read it and the tensors it reads (:class:`StageInfo`), and whether it is a
matrix product (:func:`matrix_product_operands`).

Both kinds of rule read these: the fusion rules (``tcomp.search.fusion``), to say which
stages may share a kernel, and the tiling rules (``tcomp.search.tiling``), to say which
kernels they can tile.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ir.expr import Binary, Cast
from ..lang.tensor import ComputeOp, Reduce, TensorRead


@dataclass(frozen=True)
class StageInfo:
    """What the space needs to know of one compute stage of the algorithm."""

    name: str
    shape: tuple
    reduction: bool  # has reduction axes
    consumers: tuple  # names of the compute stages that read it
    reads: tuple  # names of the tensors it reads (placeholders and stages)
    op: object = field(default=None, compare=False, repr=False)  # its ComputeOp


def stage_infos(s) -> dict:
    """``{name: StageInfo}`` of the compute stages of schedule ``s``, in the order they run."""
    infos = {}
    consumers: dict = {}
    for st in s.stages:
        for t in st.op.input_tensors():
            consumers.setdefault(t.name, []).append(st.name)
    for st in s.stages:
        op = st.op
        if not isinstance(op, ComputeOp):
            continue
        infos[st.name] = StageInfo(
            name=st.name, shape=tuple(st.tensor.shape),
            reduction=isinstance(op.body, Reduce),
            consumers=tuple(dict.fromkeys(consumers.get(st.name, []))),
            reads=tuple(t.name for t in op.input_tensors()), op=op)
    return infos


def matrix_product_operands(op, any_layout: bool = False) -> tuple | None:
    """``(a, b)``, the tensor names of a compute ``C[i, j] = sum(a[i, k] * b[k, j], k)``
    (each read may be wrapped in a cast), or None when ``op`` is not one. With
    ``any_layout`` (the layouts the tensor-core tilings take) also ``b`` stored as
    ``[N, K]`` (``b[j, k]``: how ``torch.nn.Linear`` keeps its weight) and one leading
    batch axis ``h`` of C indexing ``a``, ``b`` or both ahead of their two axes
    (``C[h, i, j] = sum(a[h, i, k] * b[h, k, j], k)``)."""
    body = op.body
    rank = len(op.axis)
    if not isinstance(body, Reduce) or body.combiner != "sum" or len(body.axes) != 1:
        return None
    if rank != 2 and not (any_layout and rank == 3):
        return None
    if not isinstance(body.source, Binary) or body.source.op != "*":
        return None
    *batch, i, j = op.axis
    (k,) = body.axes
    reads = [_read_of(factor) for factor in (body.source.a, body.source.b)]
    if None in reads:
        return None
    leads = ((), tuple(batch)) if any_layout else ((),)
    by_index = {tuple(r.indices): r.tensor.name for r in reads}
    a = next((by_index[lead + (i, k)] for lead in leads if lead + (i, k) in by_index), None)
    b_orders = ((k, j), (j, k)) if any_layout else ((k, j),)
    b = next((by_index[lead + order] for lead in leads for order in b_orders if lead + order in by_index), None)
    if a is None or b is None or a == b:
        return None
    if batch and all(batch[0] not in r.indices for r in reads):
        return None  # a batch axis that neither operand reads: not a product of this kind
    return a, b


def factor_indices(op) -> dict:
    """``{tensor name: its indices}`` of the two factors of a product that
    :func:`matrix_product_operands` recognised (casts looked through)."""
    reads = (_read_of(factor) for factor in (op.body.source.a, op.body.source.b))
    return {read.tensor.name: tuple(read.indices) for read in reads if read is not None}


def _read_of(e):
    while isinstance(e, Cast):
        e = e.value
    return e if isinstance(e, TensorRead) else None


__all__ = ["StageInfo", "factor_indices", "matrix_product_operands", "stage_infos"]
