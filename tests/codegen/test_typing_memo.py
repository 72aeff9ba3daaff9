"""The memo of numba's call typing (``tcomp.codegen.typing_memo``) changes nothing but
the time: the PTX of a tensor-core kernel and of an fp32 rung is identical with and
without it, and outside a tcomp compile numba types calls as it always does.

The compiles run in a subprocess without the CUDA simulator (this process has it on)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import re, sys
sys.path.insert(0, "examples")
from numba import cuda
from numba.core.types.functions import BaseFunction
import gemm_bf16, sgemm_ladder
import tcomp as tc
from tcomp.codegen.cuda_source import kernel_signature, program_source
from tcomp.codegen.runtime import import_source
from tcomp.codegen.typing_memo import memoized_typing

def normalized(ptx):
    # each compile numbers its function (the ABI tag's "v1") and its shared array anew
    return re.sub(r"_cudapy_smem_\d+", "_cudapy_smem", re.sub(r"B\d+v\d+B", "B", ptx))

def ptx_of(s, memo):
    program = tc.lower(s)
    module, _ = import_source(program_source(program, simulator=False))
    (kernel,) = program.kernels
    fn = getattr(module, kernel.name).py_func
    if memo:
        with memoized_typing():
            return normalized(cuda.compile_ptx(fn, kernel_signature(kernel), cc=(9, 0, "a"))[0])
    return normalized(cuda.compile_ptx(fn, kernel_signature(kernel), cc=(9, 0, "a"))[0])

def gemm():
    out = gemm_bf16.algorithm(128, 128, 128)
    s = tc.create_schedule(out)
    gemm_bf16.schedule(s, out)
    return s

def rung():
    C = sgemm_ladder.algorithm(256, 256, 256)
    s = tc.create_schedule(C)
    sgemm_ladder.SCHEDULES["vectorized"](s, C)
    return s

for make in (gemm, rung):
    plain = ptx_of(make(), memo=False)
    assert ptx_of(make(), memo=False) == plain, make.__name__ + ": two plain compiles differ"
    assert ptx_of(make(), memo=True) == plain, make.__name__
resolve = BaseFunction.get_call_type
assert resolve.__wrapped__ is not None  # installed, and numba's own is what it wraps
print("identical")
"""


def test_the_typing_memo_leaves_the_ptx_identical():
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    proc = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().endswith("identical")


def test_outside_a_compile_nothing_is_remembered():
    from tcomp.codegen import typing_memo

    with typing_memo.memoized_typing():
        inside = typing_memo._MEMO.get()
        assert inside == {}
    assert typing_memo._MEMO.get() is None
