"""Tensors and the operations that define them.

A tensor is either a placeholder (an input) or a compute (one value per point
of its shape, given by an expression over its axes). A compute body is a scalar
expression whose leaves are literals, axis variables and reads ``T[i, j]`` of
other tensors; a reduction (``tc.sum`` etc.) may appear only as the whole body.
"""

from __future__ import annotations

import inspect
import itertools
from dataclasses import dataclass

from ..call_site import user_call_site
from ..dtypes import check_dtype
from ..errors import LanguageError
from ..ir.expr import Expr, IntImm, Reduce, TensorRead, Var, as_expr
from ..ir.visitor import walk

_placeholder_counter = itertools.count()


@dataclass(frozen=True, eq=False, repr=False)
class IterVar(Var):
    """An axis of a compute: a loop variable with an extent and a kind."""

    extent: int = 0
    kind: str = "spatial"  # "spatial" or "reduce"

    def __repr__(self) -> str:
        return f"IterVar({self.name}, {self.extent}, {self.kind})"


class Tensor:
    """A named multi-dimensional value: a placeholder or the result of a compute."""

    def __init__(self, name: str, shape: tuple, dtype: str, op: "Operation"):
        self.name = name
        self.shape = shape
        self.dtype = dtype
        self.op = op

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __getitem__(self, indices) -> TensorRead:
        if not isinstance(indices, tuple):
            indices = (indices,)
        if len(indices) != len(self.shape):
            raise LanguageError(
                f"{self.name} has {len(self.shape)} dimensions but is indexed with {len(indices)}")
        exprs = []
        for x in indices:
            e = as_expr(x)
            if e.dtype not in ("int32", "int8"):
                raise LanguageError(f"index of {self.name} must be an integer expression, got {e.dtype}")
            exprs.append(e)
        return TensorRead(self, tuple(exprs))

    def __repr__(self) -> str:
        return f"Tensor({self.name}, {self.shape}, {self.dtype})"

    __hash__ = object.__hash__


class Operation:
    """Base class of what defines a tensor."""

    name: str

    def input_tensors(self) -> list:
        return []


class PlaceholderOp(Operation):
    def __init__(self, name: str, order: int):
        self.name = name
        self.order = order  # creation order: the module's argument order


class ComputeOp(Operation):
    def __init__(self, name: str, axis: tuple, reduce_axis: tuple, body: Expr, site=None):
        self.name = name
        self.axis = axis
        self.reduce_axis = reduce_axis
        self.body = body
        self.site = site  # the user's tc.compute line (CallSite), for messages that blame it

    def input_tensors(self) -> list:
        seen = []
        for node in walk(self.body):
            if isinstance(node, TensorRead) and node.tensor not in seen:
                seen.append(node.tensor)
        return seen

    @property
    def reduction(self) -> Reduce | None:
        return self.body if isinstance(self.body, Reduce) else None


def _check_shape(shape, what: str) -> tuple:
    if isinstance(shape, int):
        shape = (shape,)
    shape = tuple(shape)
    if not shape or not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in shape):
        raise LanguageError(f"{what}: shape must be a non-empty tuple of positive ints, got {shape!r}")
    return shape


def _check_name(name: str) -> str:
    if not isinstance(name, str) or not name.isidentifier():
        raise LanguageError(f"tensor and axis names must be Python identifiers, got {name!r}")
    return name


def placeholder(shape, dtype: str = "float32", name: str = "placeholder") -> Tensor:
    """An input tensor of the given shape and dtype."""
    shape = _check_shape(shape, f"placeholder {name!r}")
    t = Tensor(_check_name(name), shape, check_dtype(dtype), None)
    t.op = PlaceholderOp(name, next(_placeholder_counter))
    t.op.output = t
    return t


def reduce_axis(extent: int, name: str = "k") -> IterVar:
    """A reduction axis ``0 <= name < extent`` for ``tc.sum``/``tc.max``/``tc.min``."""
    if not isinstance(extent, int) or isinstance(extent, bool) or extent <= 0:
        raise LanguageError(f"reduce_axis {name!r}: extent must be a positive int, got {extent!r}")
    return IterVar(_check_name(name), "int32", extent, "reduce")


_AXIS_NAMES = "ijlmnopqrstuvw"


def compute(shape, fcompute, name: str = "compute") -> Tensor:
    """A tensor whose element at ``(i, j, ...)`` is ``fcompute(i, j, ...)``."""
    shape = _check_shape(shape, f"compute {name!r}")
    _check_name(name)
    params = _axis_names(fcompute, shape, name)
    axis = tuple(IterVar(p, "int32", d, "spatial") for p, d in zip(params, shape))
    try:
        body = as_expr(fcompute(*axis))
    except LanguageError as err:  # a tc.sum with a bad axis, a read with the wrong arity...
        if str(err).startswith(f"compute {name!r}"):
            raise
        raise LanguageError(f"compute {name!r}: {err}") from None
    if not isinstance(body, Expr):
        raise LanguageError(f"compute {name!r}: the function must return a tensor expression")
    reductions = [n for n in walk(body) if isinstance(n, Reduce)]
    reduce_axes: tuple = ()
    if reductions:
        if not isinstance(body, Reduce) or len(reductions) > 1:
            raise LanguageError(
                f"compute {name!r}: a reduction must be the whole body of a compute; "
                "put what comes after it (SiLU, a cast, a scale) in a compute of its own")
        reduce_axes = body.axes
    _check_axes_used(name, body, axis, reduce_axes)
    t = Tensor(name, shape, body.dtype, None)
    t.op = ComputeOp(name, axis, reduce_axes, body, user_call_site())
    t.op.output = t
    return t


def _axis_names(fcompute, shape: tuple, name: str) -> list:
    """The names of ``fcompute``'s parameters, one per dimension of ``shape``; a
    LanguageError when it takes another number of axes."""
    try:
        parameters = list(inspect.signature(fcompute).parameters.values())
    except (TypeError, ValueError):  # a builtin or a callable without a signature
        return list(_AXIS_NAMES[: len(shape)])
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if any(p.kind == p.VAR_POSITIONAL for p in parameters):
        return list(_AXIS_NAMES[: len(shape)])
    required = [p for p in positional if p.default is p.empty]
    if not len(required) <= len(shape) <= len(positional):
        takes = ", ".join(p.name for p in positional) or "none"
        want = ", ".join(_AXIS_NAMES[: len(shape)])
        raise LanguageError(
            f"compute {name!r}: its function takes {len(positional)} axis argument(s) ({takes}), but the shape "
            f"{tuple(shape)} has {len(shape)} dimension(s); write lambda {want}: ... (one axis per dimension)")
    return [p.name for p in positional[: len(shape)]]


def _check_axes_used(name, body, axis, reduce_axes):
    allowed = set(axis) | set(reduce_axes)
    for node in walk(body):
        if isinstance(node, IterVar) and node not in allowed:
            raise LanguageError(
                f"compute {name!r} uses axis {node.name!r}, which is neither one of its own axes "
                "nor a reduce_axis of its reduction")


def tensor_inputs(out: Tensor) -> list:
    """Every tensor ``out`` depends on (itself included), producers before consumers."""
    order: list = []
    visiting: set = set()

    def visit(t):
        if t in order:
            return
        if t in visiting:
            raise LanguageError(f"tensor {t.name} depends on itself")
        visiting.add(t)
        for x in t.op.input_tensors():
            visit(x)
        visiting.discard(t)
        order.append(t)

    visit(out)
    return order


def placeholders_of(out: Tensor) -> list:
    ps = [t for t in tensor_inputs(out) if isinstance(t.op, PlaceholderOp)]
    return sorted(ps, key=lambda t: t.op.order)


def is_int_const(e: Expr) -> bool:
    return isinstance(e, IntImm)
