"""A float32 reciprocal in one instruction, for the scalar functions whose quotient is not a
rounding point of its own (``tc.sigmoid``, ``tc.silu``).

``x / y`` compiles to ``div.rn.f32``: the correctly rounded quotient from a reciprocal on the
special-function unit, five FMAs, a range check and a branch to a slow path. A SiLU
epilogue is mostly that division and the exponential, and on a matrix product whose tensor
cores wait for it (one block an SM) it was 9% of the kernel's time (7239 x 12288 x 4096 on
the H100, ``benchmarks/epilogue_cost.py``: 1.160 ms with SiLU, 1.056 ms without). With the
reciprocal below the SiLU's share went from 0.022 to 0.013 ms at 1024 rows but stayed
0.104 ms at 7239 (H100, two runs); there, by estimate, the quarter-rate units that both
forms use (the exponential's and the reciprocal's, the bfloat16 conversions) bound it.

:func:`reciprocal` is ``rcp.approx.ftz.f32``, the special-function unit's reciprocal alone:
within 1 ulp of the correctly rounded value for a normal operand (PTX ISA, "rcp"; subnormal
operands and results are flushed to zero). The sigmoid helper takes it of ``1 + exp(-|x|)``,
which lies in [1, 2], where nothing is subnormal; ``tests/ir/test_functions.py`` checks the
functions' documented bounds on the GPU.

The simulator's :func:`sim_reciprocal` is the correctly rounded reciprocal (one of the
values the GPU may return).
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import float32, types
from numba.cuda.extending import intrinsic

_F32 = ir.FloatType()


@intrinsic
def reciprocal(typingctx, x):
    """1 / x in float32 by ``rcp.approx.ftz.f32`` (within 1 ulp for normal x; see the module
    docstring)."""

    def codegen(context, builder, sig, args):
        value = context.cast(builder, args[0], sig.args[0], types.float32)
        fn = ir.FunctionType(_F32, [_F32])
        return builder.call(ir.InlineAsm(fn, "rcp.approx.ftz.f32 $0, $1;", "=f,f"), [value])

    return types.float32(x), codegen


def sim_reciprocal(x):
    """The simulator's :func:`reciprocal`: the correctly rounded float32 reciprocal."""
    with np.errstate(divide="ignore"):
        return float32(np.float32(1.0) / np.float32(x))


__all__ = ["reciprocal", "sim_reciprocal"]
