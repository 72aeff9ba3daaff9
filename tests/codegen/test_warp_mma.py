"""The warp-level matrix instructions (tcomp/codegen/warp_mma.py): one warp stages A and B
in shared memory with cp.async, loads the mma fragments with ldmatrix (and B transposed
from a row-major tile), multiplies with mma.sync m16n8k16, and stores D by its fragment
layout; another builds the fragments from float32 with the packed conversions. In the
simulator the instructions' Python models run; compiled offline the same kernels must
assemble for sm_90a; on a GPU (``-m gpu``) they are checked against float64."""

import os
import shutil
import subprocess
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from numba import cuda, uint16, uint32  # NOTE: a module global: the simulator swaps `cuda` there only

from tcomp.codegen import warp_mma
from tcomp.codegen.warp_mma import a_element, b_element, c_element
from workloads import json_from_a_process_without_the_simulator

NARROW = {"bf16": ml_dtypes.bfloat16, "f16": np.float16}


def _simulator() -> bool:
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


def kernels(simulator: bool, kind: str = "bf16"):
    """(ldmatrix kernel, packed-conversion kernel): D = A @ B for one warp."""
    ops = warp_mma.instructions(simulator)
    mma = ops[f"mma_m16n8k16_{kind}"]
    ldmatrix_x4, ldmatrix_x2_trans = ops["ldmatrix_x4"], ops["ldmatrix_x2_trans"]
    cp_async16, commit, wait_0 = ops["cp_async16"], ops["cp_async_commit"], ops["cp_async_wait_0"]
    pack = ops[f"pack_{kind}x2"]

    def through_shared(a_bits, b_bits, d):
        """a_bits: A 16x16 row-major, b_bits: B 16x8 row-major (K x N), as 16-bit patterns."""
        sa = cuda.shared.array(256, uint16)
        sb = cuda.shared.array(128, uint16)
        lane = uint32(cuda.threadIdx.x)
        cp_async16(sa, lane * uint32(8), a_bits, lane * uint32(8))
        if lane < uint32(16):
            cp_async16(sb, lane * uint32(8), b_bits, lane * uint32(8))
        commit()
        wait_0()
        cuda.syncthreads()
        a0, a1, a2, a3 = ldmatrix_x4(sa, (lane % uint32(16)) * uint32(16) + (lane // uint32(16)) * uint32(8))
        b0, b1 = ldmatrix_x2_trans(sb, (lane % uint32(16)) * uint32(8))
        d0, d1, d2, d3 = mma(a0, a1, a2, a3, b0, b1, 0.0, 0.0, 0.0, 0.0)
        g, t = lane // uint32(4), lane % uint32(4)
        d[g * uint32(8) + t * uint32(2)] = d0
        d[g * uint32(8) + t * uint32(2) + uint32(1)] = d1
        d[(g + uint32(8)) * uint32(8) + t * uint32(2)] = d2
        d[(g + uint32(8)) * uint32(8) + t * uint32(2) + uint32(1)] = d3

    def from_registers(a, b, c, d):
        """a: A 16x16 float32, b: B 16x8 float32 (row-major), c: C 16x8: D = A @ B + C, the
        fragments packed straight from float32 (cvt.rn.*x2.f32 rounds each value)."""
        lane = uint32(cuda.threadIdx.x)
        g, t = lane // uint32(4), lane % uint32(4)
        r0, r8, k = g * uint32(16), (g + uint32(8)) * uint32(16), t * uint32(2)
        a0 = pack(a[r0 + k + uint32(1)], a[r0 + k])
        a1 = pack(a[r8 + k + uint32(1)], a[r8 + k])
        a2 = pack(a[r0 + k + uint32(9)], a[r0 + k + uint32(8)])
        a3 = pack(a[r8 + k + uint32(9)], a[r8 + k + uint32(8)])
        b0 = pack(b[(k + uint32(1)) * uint32(8) + g], b[k * uint32(8) + g])
        b1 = pack(b[(k + uint32(9)) * uint32(8) + g], b[(k + uint32(8)) * uint32(8) + g])
        o0, o8 = g * uint32(8) + k, (g + uint32(8)) * uint32(8) + k
        d0, d1, d2, d3 = mma(a0, a1, a2, a3, b0, b1, c[o0], c[o0 + uint32(1)], c[o8], c[o8 + uint32(1)])
        d[o0], d[o0 + uint32(1)], d[o8], d[o8 + uint32(1)] = d0, d1, d2, d3

    return through_shared, from_registers


def _inputs(kind, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((16, 16)).astype(NARROW[kind])
    b = rng.standard_normal((16, 8)).astype(NARROW[kind])
    return a, b


def _run_both(kind):
    through_shared, from_registers = (cuda.jit(k) for k in kernels(_simulator(), kind))
    a, b = _inputs(kind)
    want = a.astype(np.float64) @ b.astype(np.float64)
    d = np.full(128, np.nan, np.float32)
    through_shared[1, 32](a.view(np.uint16).reshape(-1), b.view(np.uint16).reshape(-1), d)
    got_shared = d.reshape(16, 8).copy()
    c = np.random.default_rng(1).standard_normal((16, 8)).astype(np.float32)
    d = np.full(128, np.nan, np.float32)
    from_registers[1, 32](a.astype(np.float32).reshape(-1), b.astype(np.float32).reshape(-1), c.reshape(-1), d)
    return want, got_shared, want + c, d.reshape(16, 8)


@pytest.mark.parametrize("kind", ["bf16", "f16"])
def test_ldmatrix_and_mma_compute_a_16x16_by_16x8_product(kind):
    want, got, want_c, got_c = _run_both(kind)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got_c, want_c, rtol=1e-5, atol=1e-5)


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["bf16", "f16"])
def test_the_models_match_the_gpu(kind):
    """The same kernels on the GPU: the layouts the models assume are the hardware's."""
    test_ldmatrix_and_mma_compute_a_16x16_by_16x8_product(kind)


def test_the_fragment_layouts_cover_each_matrix_once():
    a = {a_element(lane, r, h) for lane in range(32) for r in range(4) for h in range(2)}
    b = {b_element(lane, r, h) for lane in range(32) for r in range(2) for h in range(2)}
    c = {c_element(lane, r) for lane in range(32) for r in range(4)}
    assert a == {(i, j) for i in range(16) for j in range(16)}
    assert b == {(k, n) for k in range(16) for n in range(8)}
    assert c == {(i, j) for i in range(16) for j in range(8)}


@pytest.mark.parametrize("kind", ["bf16", "f16"])
def test_packed_conversions_round_to_nearest_even(kind):
    pack = warp_mma.instructions(simulator=True)[f"pack_{kind}x2"]
    values = np.array([1.0, 1 + 2.0**-8, 1 + 3 * 2.0**-8, -2.5e-3, 65504.0, 70000.0, np.inf, -0.0, 3.14159],
                      dtype=np.float32)
    for hi, lo in zip(values, values[::-1]):
        word = int(pack(hi, lo))
        with np.errstate(over="ignore"):
            want_lo, want_hi = np.array([lo, hi], np.float32).astype(NARROW[kind]).view(np.uint16)
        assert word & 0xFFFF == int(want_lo) and word >> 16 == int(want_hi)


@pytest.mark.skipif(not _simulator(), reason="the model's timing of cp.async copies; on a GPU it is a race")
def test_cp_async_lands_only_at_its_wait():
    ops = warp_mma.instructions(simulator=True)
    cp_async16, commit = ops["cp_async16"], ops["cp_async_commit"]
    wait_1, wait_0 = ops["cp_async_wait_1"], ops["cp_async_wait_0"]

    @cuda.jit
    def kernel(src, seen):
        smem = cuda.shared.array(16, uint16)
        lane = uint32(cuda.threadIdx.x)
        smem[lane] = uint16(0)
        cp_async16(smem, lane * uint32(8), src, lane * uint32(8))
        commit()
        cp_async16(smem, lane * uint32(8), src, lane * uint32(8) + uint32(16))
        commit()
        seen[lane * uint32(3)] = smem[lane * uint32(8)]  # nothing has landed
        wait_1()  # the first group lands, the second may still fly
        seen[lane * uint32(3) + uint32(1)] = smem[lane * uint32(8)]
        wait_0()
        seen[lane * uint32(3) + uint32(2)] = smem[lane * uint32(8)]

    src = np.arange(1, 33, dtype=np.uint16)
    seen = np.zeros(6, np.uint16)
    kernel[1, 2](src, seen)
    assert seen.reshape(2, 3).tolist() == [[0, 1, 17], [0, 9, 25]]


@pytest.mark.skipif(not _simulator(), reason="the simulator's check of a warp that is not whole")
def test_a_warp_instruction_without_its_whole_warp_says_so(monkeypatch):
    monkeypatch.setattr(warp_mma._WarpRendezvous, "TIMEOUT", 1.0)
    mma = warp_mma.instructions(simulator=True)["mma_m16n8k16_bf16"]

    @cuda.jit
    def kernel(d):
        z = uint32(0)
        d0, d1, d2, d3 = mma(z, z, z, z, z, z, 0.0, 0.0, 0.0, 0.0)
        d[cuda.threadIdx.x] = d0

    with pytest.raises(RuntimeError, match="not every lane of the warp"):
        kernel[1, 16](np.zeros(16, np.float32))


_PTX = """
import json, sys
sys.path[:0] = ["tests", "tests/codegen"]
from numba import cuda, float32, uint16, types
from test_warp_mma import kernels
out = {}
for kind in ("bf16", "f16"):
    through_shared, from_registers = kernels(False, kind)
    sig_a = (uint16[::1], uint16[::1], float32[::1])
    sig_b = (float32[::1], float32[::1], float32[::1], float32[::1])
    out[kind] = [cuda.compile_ptx(through_shared, sig_a, cc=(9, 0, "a"))[0],
                 cuda.compile_ptx(from_registers, sig_b, cc=(9, 0, "a"))[0]]
print(json.dumps(out))
"""


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs CUDA's ptxas on the PATH")
def test_the_kernels_assemble_for_sm90a():
    ptxs = json_from_a_process_without_the_simulator(["-c", _PTX], timeout=300)
    for kind, (shared, registers) in ptxs.items():
        assert f"mma.sync.aligned.m16n8k16.row.col.f32.{kind}.{kind}.f32" in shared
        assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in shared
        assert "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16" in shared
        assert "cp.async.cg.shared.global" in shared and "cp.async.wait_group 0" in shared
        assert f"cvt.rn.{kind}x2.f32" in registers
        for ptx in (shared, registers):
            path = Path(os.environ.get("TMPDIR", "/tmp")) / f"warp_mma_{kind}.ptx"
            path.write_text(ptx)
            run = subprocess.run(["ptxas", "-arch=sm_90a", "-v", str(path), "-o", os.devnull],
                                 capture_output=True, text=True)
            assert run.returncode == 0, run.stderr
            assert "bytes spill" not in run.stderr or " 0 bytes spill stores" in run.stderr, run.stderr


def _ldmatrix_kernel(simulator, count, trans):
    op = warp_mma.instructions(simulator)[f"ldmatrix_x{count}{'_trans' if trans else ''}"]

    def kernel(bits, out):
        smem = cuda.shared.array(256, uint16)
        lane = uint32(cuda.threadIdx.x)
        for n in range(8):
            smem[lane * uint32(8) + uint32(n)] = bits[lane * uint32(8) + uint32(n)]
        cuda.syncthreads()
        regs = op(smem, lane * uint32(8))  # lane l points at row l: matrix l // 8, row l % 8
        if count == 1:
            out[lane] = regs
        else:
            for m in range(count):
                out[lane * uint32(count) + uint32(m)] = regs[m]

    return kernel


@pytest.mark.parametrize("count", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_ldmatrix_hands_each_lane_the_documented_pair(count, trans):
    bits = np.arange(256, dtype=np.uint16) * np.uint16(3) + np.uint16(1)
    out = np.zeros(32 * count, np.uint32)
    cuda.jit(_ldmatrix_kernel(_simulator(), count, trans))[1, 32](bits, out)
    matrices = bits.reshape(4, 8, 8)
    for lane in range(32):
        group, t = divmod(lane, 4)
        for m in range(count):
            pair = matrices[m][2 * t:2 * t + 2, group] if trans else matrices[m][group, 2 * t:2 * t + 2]
            assert out[lane * count + m] == int(pair[0]) | (int(pair[1]) << 16), (lane, m)


@pytest.mark.gpu
@pytest.mark.parametrize("trans", [False, True])
def test_ldmatrix_on_the_gpu(trans):
    test_ldmatrix_hands_each_lane_the_documented_pair(4, trans)


@pytest.mark.parametrize("nbytes", [4, 8, 16])
def test_cp_async_copies_4_8_and_16_bytes(nbytes):
    ops = warp_mma.instructions(_simulator())
    copy, commit, wait_0 = ops[f"cp_async{nbytes}"], ops["cp_async_commit"], ops["cp_async_wait_0"]
    per_lane = nbytes // 2

    @cuda.jit
    def kernel(src, dst):
        smem = cuda.shared.array(256, uint16)
        lane = uint32(cuda.threadIdx.x)
        copy(smem, lane * uint32(per_lane), src, lane * uint32(per_lane))
        commit()
        wait_0()
        cuda.syncthreads()
        for n in range(per_lane):
            dst[lane * uint32(per_lane) + uint32(n)] = smem[lane * uint32(per_lane) + uint32(n)]

    src = np.arange(32 * per_lane, dtype=np.uint16) + np.uint16(7)
    dst = np.zeros_like(src)
    kernel[1, 32](src, dst)
    np.testing.assert_array_equal(dst, src)
