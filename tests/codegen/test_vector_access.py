"""Vector (64/128-bit) loads and stores from ``vectorize`` loops: the lane analysis that
proves an access consecutive and aligned, the code it turns into, and the runtime's
alignment check."""

import numpy as np
import pytest

import tcomp as tc
from tcomp.codegen.runtime import Module
from tcomp.ir.expr import IntImm, Var, binary
from tcomp.ir.lanes import is_multiple, lane_form, modular_set
from workloads import check_float, matmul, matmul_tol, run_and_compare

x, y, v = Var("x"), Var("y"), Var("v")


def test_modular_set_of_affine_and_div_mod():
    assert modular_set(binary("+", binary("*", x, 8), 4)) == (8, 4)
    assert modular_set(binary("*", binary("+", binary("*", x, 16), y), 4)) == (4, 0)
    assert modular_set(binary("%", binary("*", x, 12), 8)) == (4, 0)  # 12x mod 8 is 0 or 4
    assert modular_set(binary("//", binary("*", x, 16), 4)) == (4, 0)
    assert modular_set(IntImm(6)) == (0, 6)
    assert is_multiple(binary("*", binary("+", x, y), 8), 4)
    assert not is_multiple(binary("+", binary("*", x, 8), 2), 4)


def test_lane_form_through_the_div_mod_of_a_fused_loop():
    # a 128x8 tile fused and split by 4: row = (4q + v) // 8, column = (4q + v) % 8
    fused = binary("+", binary("*", x, 4), v)
    row, col = binary("//", fused, 8), binary("%", fused, 8)
    index = binary("+", binary("*", row, 4096), col)
    base, stride = lane_form(index, v, 4)
    assert stride == 1 and is_multiple(base, 4)
    assert "v" not in str(base)
    # the transposed store: column-major, lanes 128 apart
    assert lane_form(binary("+", binary("*", col, 128), row), v, 4)[1] == 128


def test_lane_form_sees_through_a_min_without_the_lane():
    """A boundary tile shifted inwards starts at ``min(x * 64, 936)``: the same for every
    lane, so a row of it is still consecutive (and aligned: 64x and 936 are multiples of 4)."""
    start = binary("min", binary("*", x, 64), IntImm(936))
    index = binary("+", binary("*", binary("+", start, y), 1000), binary("+", binary("*", y, 4), v))
    base, stride = lane_form(index, v, 4)
    assert stride == 1 and is_multiple(base, 4) and "v" not in str(base)
    assert lane_form(binary("min", v, IntImm(3)), v, 4) is None  # the lane inside a min: no form


def test_lane_form_refuses_lanes_that_cross_a_row():
    # rows of 6: lanes 4q..4q+3 may straddle two rows
    fused = binary("+", binary("*", x, 4), v)
    assert lane_form(binary("%", fused, 6), v, 4) is None
    assert lane_form(binary("*", v, v), v, 4) is None


def _vector_matmul(M, N, K, fill_vector=4):
    w = matmul(M, N, K)
    C = w["C"]
    s = w.schedule()
    AS = s.cache_read("A", "shared", [C])
    WS = s.cache_read("W", "shared", [C])
    i, j = s[C].axis
    ko, ki = s[C].split(s[C].reduce_axis[0], 8)
    s[C].reorder(i, j, ko, ki)
    s[C].bind(i, "threadIdx.y")
    s[C].bind(j, "threadIdx.x")
    for cache in (AS, WS):
        s[cache].compute_at(s[C], ko)
        a, b = s[cache].axis
        fused = s[cache].fuse(a, b)
        rest, lanes = s[cache].split(fused, fill_vector)
        s[cache].vectorize(lanes)
        ty, tx = s[cache].split(rest, N)
        s[cache].bind(tx, "threadIdx.x")
    return w, s


def test_consecutive_aligned_lanes_become_vector_loads_and_stores(rng):
    w, s = _vector_matmul(8, 8, 16)
    mod = tc.build(s)
    assert "_load4(A," in mod.source and "_load4(W," in mod.source
    assert "_store4(A_shared," in mod.source and "_store4(W_shared," in mod.source
    assert mod.vector_alignment == {"A": 16, "W": 16}
    run_and_compare(s, w, rng, **matmul_tol(16))


def test_misaligned_rows_stay_scalar(rng):
    """K = 18: a row of A starts at 18*i, not a multiple of 4 elements."""
    w, s = _vector_matmul(8, 8, 18)
    mod = tc.build(s)
    assert "_load4(A," not in mod.source
    assert mod.vector_alignment.get("A") is None
    run_and_compare(s, w, rng, **matmul_tol(18))


def test_two_lane_vectors(rng):
    w, s = _vector_matmul(4, 6, 16, fill_vector=2)
    mod = tc.build(s)
    assert "_load2(A," in mod.source and "_load2(W," in mod.source
    run_and_compare(s, w, rng, **matmul_tol(16))


class _FakeDeviceArray:
    """What the runtime sees of a device array: shape, dtype, contiguity, address."""

    def __init__(self, shape, dtype, address):
        self.shape, self.dtype, self.size = shape, np.dtype(dtype), int(np.prod(shape))
        self.nbytes = self.size * self.dtype.itemsize
        self.__cuda_array_interface__ = {"data": (address, False), "shape": shape, "typestr": self.dtype.str,
                                         "version": 3}

    def is_c_contiguous(self):
        return True


def test_misaligned_device_argument_is_refused_by_name():
    w, s = _vector_matmul(8, 8, 16)
    mod = tc.build(s)
    args = [_FakeDeviceArray((8, 16), "float32", 0x10000 + 4), _FakeDeviceArray((16, 8), "float32", 0x20000),
            _FakeDeviceArray((8, 8), "float32", 0x30000)]
    with pytest.raises(tc.ArgumentError, match=r"argument A: .*128-bit.*16-byte boundary.*0x10004"):
        mod._check(args)
    args[0] = _FakeDeviceArray((8, 16), "float32", 0x10000)
    assert mod._check(args) == "device"


def test_tail_guards_that_cut_between_vectors_stay_uniform():
    from tcomp.ir.expr import compare

    from tcomp.ir.lanes import uniform_condition

    guard = compare("<", binary("+", binary("*", x, 4), v), 32)
    assert str(uniform_condition(guard, v, 4)) == str(compare("<", binary("*", x, 4), 32))
    assert uniform_condition(compare("<", binary("+", binary("*", x, 4), v), 13), v, 4) is None


def test_a_tail_inside_a_vector_keeps_scalar_lanes(rng):
    from workloads import vector_op

    X, O = vector_op(13)
    s = tc.create_schedule(O)
    io, ii = s[O].split(s[O].axis[0], 4)
    s[O].vectorize(ii)
    s[O].bind(io, "threadIdx.x")
    mod = tc.build(s)
    assert "_load4" not in mod.source and "_store4" not in mod.source
    xs = rng.standard_normal(13).astype(np.float32)
    out = np.full(13, np.nan, np.float32)
    mod(xs, out)
    check_float(out, xs.astype(np.float64) * 2 + 1, rtol=1e-6, atol=1e-6)


def _bf16_chain(M, N, lanes):
    """examples/silu_mul_quant.py's chain (bfloat16 in, int8 out), flattened into
    vectors of ``lanes`` elements, 8 threads a block."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
    import silu_mul_quant

    out = silu_mul_quant.algorithm(M, N)
    s = tc.create_schedule(out)
    s["Y"].compute_inline()
    s["Z"].compute_inline()
    flat = s[out].fuse(*s[out].axis)
    rest, vector = s[out].split(flat, lanes)
    s[out].vectorize(vector)
    block, thread = s[out].split(rest, 8)
    s[out].bind(block, "blockIdx.x")
    s[out].bind(thread, "threadIdx.x")
    return out, s


def _run_bf16_chain(out, s, rng):
    import ml_dtypes

    from workloads import poisoned

    M, N = out.shape
    xs = [(rng.standard_normal((M, N)) * 4).astype(ml_dtypes.bfloat16) for _ in range(2)]
    from tcomp.lang.tensor import placeholders_of

    want = tc.evaluate(out, dict(zip(placeholders_of(out), xs)))  # X, G in argument order
    got = poisoned(out.shape, "int8", want)
    tc.build(s)(*xs, got)
    check = np.abs(got.astype(np.int32) - want.astype(np.int32))
    assert check.max() <= 1 and np.count_nonzero(check) <= 2, np.argwhere(check)


@pytest.mark.parametrize("lanes, loads, store, alignment", [
    (8, "_load8", "_store8", {"X": 16, "G": 16, "Q": 8}),    # 16 bytes of bfloat16 a load
    (4, "_load4", "_store4", {"X": 8, "G": 8, "Q": 4}),
    (16, None, "_store16", {"Q": 16}),                       # 32 bytes of bfloat16: scalar loads
])
def test_bfloat16_and_int8_lanes_travel_as_vectors_of_their_bits(rng, lanes, loads, store, alignment):
    out, s = _bf16_chain(4, 64, lanes)
    mod = tc.build(s)
    if loads:
        assert f"{loads}(X," in mod.source and f"{loads}(G," in mod.source
        assert "_load_bfloat16(X_v0)" in mod.source  # the lanes are bit patterns until converted
    else:
        assert "_load" not in mod.source.split("def k_Q")[1].replace("_load_bfloat16", "")
    assert f"{store}(Q," in mod.source
    assert mod.vector_alignment == alignment
    _run_bf16_chain(out, s, rng)


_PTX_OF_THE_CHAIN = """
import json, sys
sys.path[:0] = ["tests", "tests/codegen"]
import tcomp as tc
from tcomp.codegen.ptx import ptx_report
from test_vector_access import _bf16_chain
out, s = _bf16_chain(64, 64, 8)
report, = ptx_report(tc.lower(s))
print(json.dumps({"ptx": report.ptx, "spills": report.spills}))
"""


@pytest.mark.skipif(__import__("shutil").which("ptxas") is None, reason="needs CUDA's ptxas on the PATH")
def test_bfloat16_vector_loads_are_128_bit_in_the_ptx():
    """Eight bfloat16 lanes: one 128-bit load of X and of G, one 64-bit store of Q (in a
    subprocess without the simulator, as tests/codegen/test_ptx_examples.py)."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    proc = subprocess.run([sys.executable, "-c", _PTX_OF_THE_CHAIN], cwd=Path(__file__).resolve().parents[2],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.splitlines()[-1])
    ptx = report["ptx"]
    loads = [line for line in ptx.splitlines() if "ld.global" in line]
    stores = [line for line in ptx.splitlines() if "st.global" in line]
    assert len(loads) == 2 and all(".v4." in line for line in loads), loads
    assert len(stores) == 1 and ".v2." in stores[0], stores
    assert not report["spills"]
    # the int8 quantization rounds and converts on the FMA pipe, not the conversion unit
    assert "cvt.rni" not in ptx and "cvt.rzi" not in ptx
    # and divides by 0.05 with the corrected reciprocal; SiLU takes the special-function unit's
    # reciprocal of 1 + exp(-|x|) instead of dividing: no division is left
    assert ptx.count("div.rn.f32") == 0, ptx.count("div.rn.f32")
    assert ptx.count("rcp.approx.ftz.f32") == 8, ptx.count("rcp.approx.ftz.f32")
