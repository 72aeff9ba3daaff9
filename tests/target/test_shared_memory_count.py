"""Shared memory is counted once, as the code generator lays it out
(``tcomp.target.storage.shared_layout``: each buffer on a 16-byte boundary, a swizzled
one on a 1,024-byte boundary): ``tc.check`` refuses a block that the plain sum of its
buffers would let through but whose laid-out memory exceeds the limit, so that a schedule
``tc.check`` accepts never fails at launch (issue 30, item 6: the check summed the buffers
while the kernel declared them aligned)."""

import ast
import sys
from pathlib import Path

import pytest

import tcomp as tc
from tcomp.codegen.cuda_source import program_source
from tcomp.target import H200
from tcomp.target.storage import kernel_shared_bytes

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from gemm_bf16 import mma_warp_tiles  # noqa: E402

#: three float32 buffers of this many elements: 12 bytes under the H200's 232,448 bytes
#: per block when summed, 16 over it on 16-byte boundaries
ELEMENTS = 19370


def _three_shared_inputs(n=ELEMENTS):
    X, Y, Z = (tc.placeholder((n,), "float32", name=name) for name in "XYZ")
    O = tc.compute((n,), lambda i: X[i] + Y[i] + Z[i], name="O")
    s = tc.create_schedule(O)
    block, _ = s[O].split(s[O].axis[0], n)
    s[O].bind(block, "blockIdx.x")
    for name in "XYZ":
        s[s.cache_read(name, "shared", [O])].compute_at(s[O], block)
    return s


def test_the_sum_fits_but_the_layout_does_not():
    assert 3 * 4 * ELEMENTS <= H200.smem_per_block < 3 * 16 * -(-4 * ELEMENTS // 16)
    with pytest.raises(tc.CapacityError, match="needs 232464 bytes of shared memory per block .* limit is 232448"):
        tc.check(_three_shared_inputs())


def test_one_element_less_fits():
    tc.check(_three_shared_inputs(ELEMENTS - 4))


def test_the_kernel_declares_what_the_check_counts():
    """The dynamic shared memory a kernel asks for at launch is the check's count."""
    program = tc.lower(_gemm())
    (kernel,) = program.kernels
    module = ast.parse(program_source(program, simulator=False))
    (declared,) = [ast.literal_eval(node.value) for node in module.body
                   if isinstance(node, ast.Assign) and node.targets[0].id == "DYNAMIC_SHARED"]
    assert declared == {kernel.name: kernel_shared_bytes(kernel)}
    assert declared[kernel.name] > H200.max_static_shared_bytes


def _gemm(M=128, N=128, K=128):
    A = tc.placeholder((M, K), "bfloat16", name="A")
    W = tc.placeholder((K, N), "bfloat16", name="W")
    k = tc.reduce_axis(K, name="k")
    C = tc.compute((M, N), lambda i, j: tc.sum(tc.cast(A[i, k], "float32") * tc.cast(W[k, j], "float32"), axis=k),
                   name="C")
    s = tc.create_schedule(C)
    mma_warp_tiles(s, C, "C", "A", "W", BM=128, BN=128, BK=32, WM=64, WN=64, stages=4, pad=8)
    return s
