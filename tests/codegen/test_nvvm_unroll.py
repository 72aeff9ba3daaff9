"""Unroll pragmas for NVVM (tcomp/codegen/nvvm_unroll.py): ``unroll`` loops stay loops in
the generated source and NVVM unrolls them, so builds take seconds.

The rewrite itself is checked on LLVM IR text here; the end-to-end check (offline PTX
for sm_90a: the unrolled loops leave no branch, the serial loop stays, and the
registers of a per-thread accumulator stay registers) runs in a subprocess without the
CUDA simulator, as ``tests/codegen/test_ptx_examples.py`` does.
"""

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tcomp.codegen import nvvm_unroll
from tcomp.errors import InternalError

ROOT = Path(__file__).resolve().parents[2]

# the shape of numba-cuda's IR for one kernel with two nested loops (headers B20, B40)
_IR = textwrap.dedent('''\
    define void @"_ZN12tcomp_k_test3k_CB2v1E5Array"(i8* %"A.0")
    {
    entry:
      br label %"B0"
    B0:
      br label %"B20"
    B20:
      br i1 %".5", label %"B22", label %"B60", !prof !1
    B22:
      br label %"B40"
    B40:
      br i1 %".9", label %"B42", label %"B50"
    B42:
      br label %"B40"
    B50:
      br label %"B20"
    B60:
      ret void
    }
    !0 = !{ i32 2, i32 0, i32 3, i32 2 }
    !1 = !{ !"branch_weights", i32 1, i32 99 }
    ''')


@pytest.fixture
def registry():
    saved = dict(nvvm_unroll._REGISTRY)
    nvvm_unroll._REGISTRY.clear()
    yield nvvm_unroll._REGISTRY
    nvvm_unroll._REGISTRY.clear()
    nvvm_unroll._REGISTRY.update(saved)


def test_mangled_prefix_follows_numbas_itanium_style_names():
    assert nvvm_unroll.mangled_prefix("tcomp_k_test", "k_C") == "_ZN12tcomp_k_test3k_C"


def test_flagged_loop_gets_unroll_full_metadata_on_its_back_edge(registry):
    registry[nvvm_unroll.mangled_prefix("tcomp_k_test", "k_C")] = (False, True)
    out = nvvm_unroll.add_unroll_metadata(_IR)
    # the inner loop (header B40, the second for statement) is unrolled; its back edge is B42's
    assert '  br label %"B40", !llvm.loop !3\n' in out
    assert '!2 = !{!"llvm.loop.unroll.full"}' in out and "!3 = distinct !{!3, !2}" in out
    # the outer loop's back edge (B50 -> B20) and the entry edges stay as they were
    assert 'B50:\n  br label %"B20"\n' in out
    assert out.count("!llvm.loop") == 1
    assert 'B0:\n  br label %"B20"\n' in out and 'B22:\n  br label %"B40"\n' in out  # the entry edges


def test_unregistered_functions_pass_unchanged(registry):
    registry[nvvm_unroll.mangled_prefix("another_module", "k_C")] = (True, True)
    assert nvvm_unroll.add_unroll_metadata(_IR) == _IR


def test_a_loop_count_that_disagrees_with_the_source_is_an_internal_error(registry):
    registry[nvvm_unroll.mangled_prefix("tcomp_k_test", "k_C")] = (True, True, True)
    with pytest.raises(InternalError, match="2 loops in the LLVM IR, 3 for statements"):
        nvvm_unroll.add_unroll_metadata(_IR)


_PTX_SCRIPT = textwrap.dedent('''
    import json, re
    import tcomp as tc
    from tcomp.codegen.ptx import ptx_report
    M, N, K = 64, 64, 256
    A = tc.placeholder((M, K), "float32", name="A")
    B = tc.placeholder((K, N), "float32", name="B")
    k = tc.reduce_axis(K, name="k")
    C = tc.compute((M, N), lambda i, j: tc.sum(A[i, k] * B[k, j], axis=k), name="C")
    Q = tc.compute((M, N), lambda i, j: tc.quantize(tc.cast(tc.silu(tc.cast(C[i, j], "bfloat16")), "bfloat16"),
                                                   0.05, "int8"), name="Q")
    s = tc.create_schedule(Q)
    i, j = s[Q].axis
    io, jo, ii, ji = s[Q].tile(i, j, 8, 8)
    s[Q].bind(io, "threadIdx.y"); s[Q].bind(jo, "threadIdx.x")
    s[Q].unroll(ii); s[Q].unroll(ji)
    s[C].compute_at(s[Q], jo)
    ci, cj = s[C].axis
    (kk,) = s[C].reduce_axis
    s[C].reorder(kk, ci, cj)
    s[C].unroll(ci); s[C].unroll(cj)
    (r,) = ptx_report(tc.lower(s))
    print(json.dumps({"fma": r.ptx.count("fma.rn.f32"), "branches": len(re.findall(r"\\bbra", r.ptx)),
                      "local": r.ptx.count(".local"), "stack": r.stack_frame, "registers": r.registers}))
''')


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs CUDA's ptxas on the PATH")
def test_nvvm_unrolls_the_flagged_loops_and_keeps_the_accumulator_in_registers(tmp_path):
    """An 8x8 accumulator per thread, its loops unrolled, inside a serial k loop of 256,
    then the FFN's epilogue (bf16 rounding, SiLU, bf16 rounding, int8) of the 64 values: 64 FMAs in the PTX (one unrolled k
    iteration; SiLU's exp adds more), the k loop's one back branch, and no local memory. (Without the pragmas
    NVVM leaves the epilogue's loop rolled, and the accumulator goes to local memory.)"""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["TCOMP_CACHE_DIR"] = str(tmp_path)
    proc = subprocess.run([sys.executable, "-c", _PTX_SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    assert r["fma"] >= 64, r
    assert r["local"] == 0 and r["stack"] == 0, r
    assert r["branches"] <= 2, r
