"""The search's row operators (issue 32): the ``"row"`` fusion rule puts a row's
statistics and the elementwise stages between them into the kernel of the output, and
the ``row_kernel`` tiling rule runs that kernel with a block per row."""

import random
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import tcomp as tc
from tcomp.search.kernels import ROOT, ROW
from tcomp.ir.visitor import walk
from tcomp.search.space import Space
from tcomp.search.tiling import ROW_KERNEL
from workloads import run

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import gelu_chain  # noqa: E402
import layernorm  # noqa: E402
import rmsnorm  # noqa: E402
import softmax  # noqa: E402


def _row_kernel_space(out):
    """The space of ``out`` with the ``row_kernel`` rule alone (``split_rows`` tiles a row
    operator of fewer rows than SMs too: tests/search/test_split_rows.py)."""
    return Space(out, rules=[ROW_KERNEL])


def _one_kernel_fusion(space):
    (fusion,) = [f for f in space.tileable_fusions() if len(space.groups(f)) == 1]
    return fusion


def test_softmax_has_the_one_kernel_partition_and_only_the_row_rule_tiles_it():
    """Softmax's four operators: the max, the exponentials (read by the sum and the
    division, so never inlined) and the sum all join the division's kernel under "row",
    which the row rules alone tile."""
    space = Space(softmax.algorithm(64, 256))
    assert space.options == {"Mx": ("fused", ROW, ROOT), "E": (ROW, ROOT), "S": ("fused", ROW, ROOT)}
    fusion = _one_kernel_fusion(space)
    assert dict(fusion) == {"Mx": ROW, "E": ROW, "S": ROW}
    (group,) = space.groups(fusion)
    assert [r.name for r in space.rules_for(group)] == ["row_kernel", "split_rows"]  # 64 rows: fewer than SMs
    assert frozenset(["Mx", "E", "S", "Y"]) in space.partitions()[0]


def test_a_row_stage_whose_reader_is_in_another_kernel_is_refused():
    """E under "row" joins Y's kernel; with S at root, S (a reader of E) would read an
    E that no kernel wrote: that choice is not in the space."""
    space = Space(softmax.algorithm(64, 256))
    refused = (("Mx", ROW), ("E", ROW), ("S", ROOT))
    assert refused in space.fusions()
    assert refused not in space.tileable_fusions()


def test_a_row_longer_than_shared_memory_is_read_again_from_device_memory():
    """A float32 row of 65536 elements is 256 KB, more than a block's shared memory: the
    row kernel's points there all read the row again instead of staging it."""
    space = Space(softmax.algorithm(4, 65536))
    (group,) = space.groups((("Mx", ROW), ("E", ROW), ("S", ROW)))
    (rule,) = [r for r in space.rules_for(group) if r.name == "row_kernel"]
    staged = {dict(p)["stage_row"] for p in space.valid_params(rule, group)}
    assert staged == {False}


def test_every_drawn_row_kernel_of_softmax_matches_float64(rng):
    """Points drawn in the one-kernel partition: one kernel each, legal, and the same
    result as float64 in the simulator (outputs poisoned first)."""
    M, N = 3, 256
    Y = softmax.algorithm(M, N)
    space = _row_kernel_space(Y)
    fusion = _one_kernel_fusion(space)
    x = (rng.standard_normal((M, N)) * 4.0).astype(np.float32)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    draws = random.Random(0)
    seen = set()
    for _ in range(3):
        point = space.sample(draws, fusion)
        seen.add(point.tilings)
        s = space.schedule(point)
        assert len(tc.lower(s).kernels) == 1
        assert tc.check(s).legal
        np.testing.assert_allclose(run(s, [x]), want, rtol=1e-5, atol=1e-7)
    assert len(seen) > 1


def test_layernorm_and_rmsnorm_row_kernels_match_tc_evaluate(rng):
    for example, inputs in ((layernorm, 3), (rmsnorm, 2)):
        Y = example.algorithm(2, 256)
        space = _row_kernel_space(Y)
        point = space.sample(random.Random(1), _one_kernel_fusion(space))
        s = space.schedule(point)
        assert len(tc.lower(s).kernels) == 1
        x = (rng.standard_normal((2, 256)) * 3.0 + 5.0).astype(ml_dtypes.bfloat16)
        vectors = [rng.uniform(0.5, 1.5, 256).astype(ml_dtypes.bfloat16) for _ in range(inputs - 1)]
        feeds = dict(zip(tc.inputs(Y), [x, *vectors]))
        np.testing.assert_array_equal(run(s, [x, *vectors]).astype(np.float64),
                                      tc.evaluate(Y, feeds).astype(np.float64))


def test_the_model_only_search_picks_one_kernel_for_a_softmax(tmp_path):
    """The cost model ranks the row kernel above the partitions that write the
    exponentials to device memory and read them back."""
    result = tc.autoschedule(softmax.algorithm(16, 512), trials=8, model_only=True, db=tmp_path / "db.jsonl")
    assert result.description.startswith("Y: row_kernel")
    assert len(tc.lower(result.schedule).kernels) == 1


def test_a_memory_bound_chain_ranks_16_byte_vectors_first(tmp_path):
    """Every flat tiling of the GELU chain at 8192 x 8192 is predicted at the device
    memory's time; the tie goes to the point whose bound hides the least other work:
    8 lanes a vector (16-byte loads of X, R and the broadcast bias B)."""
    result = tc.autoschedule(gelu_chain.algorithm(8192, 8192), trials=4, model_only=True, db=tmp_path / "db.jsonl")
    assert result.description.endswith("vector=8")


def test_a_row_of_prime_length_is_cut_into_padded_slices(rng):
    """89 has no divisor to cut the row into slices (the fuzzer found rfactor refusing
    1 part): the slices' last terms are padded with the reduction's identity, and the
    result is still right."""
    Y = softmax.algorithm(2, 89)
    space = _row_kernel_space(Y)
    s = space.schedule(space.sample(random.Random(0), _one_kernel_fusion(space)))
    assert len(tc.lower(s).kernels) == 1 and "min(" in str(tc.lower(s))
    x = (rng.standard_normal((2, 89)) * 4.0).astype(np.float32)
    np.testing.assert_allclose(run(s, [x]), tc.evaluate(Y, {tc.inputs(Y)[0]: x}), rtol=1e-5, atol=1e-7)


def test_softmax_exponentials_in_a_shared_row_are_computed_once(rng):
    """``row_stages="shared"``: E is computed once into a shared row after the max, and
    the sum and the output read it (one exponential an element, not two)."""
    from tcomp.codegen import program_source

    Y = softmax.algorithm(3, 512)
    s = tc.create_schedule(Y)
    softmax.schedule(s, Y, row_stages="shared", vector_slices=False)
    assert len(tc.lower(s).kernels) == 1 and tc.check(s).legal

    def exponentials(schedule):
        kernel = program_source(tc.lower(schedule), simulator=False).split("@cuda.jit(cache=True)")[1]
        return [line for line in kernel.splitlines() if "_exp(" in line]

    inlined = tc.create_schedule(Y)
    softmax.schedule(inlined, Y, vector_slices=False)
    (store_of_e,) = exponentials(s)  # the 4 lanes of E's vector store, and nothing else
    assert store_of_e.strip().startswith("_store4(E,")
    assert len(exponentials(inlined)) == 2  # the sum's and the output's
    x = (rng.standard_normal((3, 512)) * 4.0).astype(np.float32)
    np.testing.assert_allclose(run(s, [x]), tc.evaluate(Y, {tc.inputs(Y)[0]: x}), rtol=1e-5, atol=1e-8)


def test_per_row_quantization_is_one_row_kernel(rng):
    """The chapter's per-row scale (Example 5-7): the row's max of |X|, then X quantized
    by max / 127. Its one-kernel partition is a row kernel, and every drawn point gives
    tc.evaluate's int8 values exactly: the scale is the whole row's max."""
    from tcomp.testing import algorithms

    X, R, Q = algorithms.rowmax_quant(3, 256)
    space = _row_kernel_space(Q)
    fusion = _one_kernel_fusion(space)
    assert dict(fusion) == {"R": ROW}
    x = rng.standard_normal((3, 256)).astype(np.float32)
    want = tc.evaluate(Q, {X: x})
    draws = random.Random(2)
    for _ in range(2):
        s = space.schedule(space.sample(draws, fusion))
        assert len(tc.lower(s).kernels) == 1 and tc.check(s).legal
        np.testing.assert_array_equal(run(s, [x]), want)


def test_an_unknown_way_to_add_the_slices_is_refused_by_name():
    import pytest

    from tcomp.search.tiling import rows_in_blocks

    Y = softmax.algorithm(2, 64)
    s = tc.create_schedule(Y)
    with pytest.raises(tc.TcompError, match="combine must be one of 'one_thread', 'every_thread', 'tree', got 'log'"):
        rows_in_blocks(s, Y, "X", readers=["Mx", "E"], statistics=["Mx", "S"], inline=("E",), combine="log")


def test_several_rows_a_block_a_warp_each_match_float64(rng):
    """``rows=2``: a block of 32 x 2 threads takes two rows, a warp each (threadIdx.y
    the row), for the row staged or read again, the exponentials inlined or in a shared
    row; each row's slices added by its first thread."""
    x = (rng.standard_normal((4, 128)) * 4.0).astype(np.float32)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    for stage_row in (True, False):
        for row_stages in ("inline", "shared"):
            Y = softmax.algorithm(4, 128)
            s = tc.create_schedule(Y)
            softmax.schedule(s, Y, threads=32, vector=2, stage_row=stage_row, row_stages=row_stages, rows=2)
            (kernel,) = tc.lower(s).kernels
            assert kernel.block == (32, 2, 1) and kernel.grid == (2, 1, 1)
            assert tc.check(s).legal
            np.testing.assert_allclose(run(s, [x]), want, rtol=1e-5, atol=1e-7)


def test_the_search_offers_several_rows_a_block_for_short_rows(rng):
    """Points with ``rows`` > 1 are among the row kernel's valid ones (a warp or two a
    row), and one matches tc.evaluate."""
    Y = layernorm.algorithm(4, 256)
    space = _row_kernel_space(Y)
    (group,) = space.groups(_one_kernel_fusion(space))
    valid = [dict(p) for p in space.valid_params(ROW_KERNEL, group)]
    several = [p for p in valid if p["rows"] > 1]
    assert several and all(p["threads"] <= 64 for p in several)
    assert {p["rows"] for p in several} == {2, 4}  # 8 does not divide the 4 rows
    x = (rng.standard_normal((4, 256)) * 3.0 + 5.0).astype(ml_dtypes.bfloat16)
    gamma, beta = (rng.uniform(0.5, 1.5, 256).astype(ml_dtypes.bfloat16) for _ in range(2))
    s = tc.create_schedule(Y)
    ROW_KERNEL.apply(s, group, several[0])
    assert tc.lower(s).kernels[0].block[1] == several[0]["rows"]
    np.testing.assert_array_equal(run(s, [x, gamma, beta]).astype(np.float64),
                                  tc.evaluate(Y, dict(zip(tc.inputs(Y), [x, gamma, beta]))).astype(np.float64))


def test_bad_rows_a_block_are_refused_by_name():
    import pytest

    Y = rmsnorm.algorithm(6, 128)
    for kwargs, needle in ((dict(rows=4), "divides the 6 rows of Y, got 4"),
                           (dict(rows=0), "must be a positive integer")):
        s = tc.create_schedule(Y)
        with pytest.raises(tc.TcompError, match=needle):
            rmsnorm.schedule(s, Y, threads=32, **kwargs)


def _softmax_warps(rows, stage_row, M=8, N=1024, threads=32, combine="every_thread"):
    Y = softmax.algorithm(M, N)
    s = tc.create_schedule(Y)
    softmax.schedule(s, Y, threads=threads, vector=4, combine=combine, stage_row=stage_row, rows=rows)
    (kernel,) = tc.lower(s).kernels
    return Y, s, kernel


def test_a_warp_a_row_adds_its_slices_through_shuffles(rng):
    """A warp per row (32 threads, every thread adding the 32 slices): the slices stay in
    registers and each lane reads the others' with shfl.sync, in the same order as from
    shared memory. Read again from device memory (``stage_row=False``), a row needs no
    shared memory at all, and the kernel keeps no barrier; with the row staged, the
    barriers around it stay. The simulator models the shuffle, and the results match
    float64."""
    from tcomp.ir.expr import WarpShuffle
    from tcomp.ir.stmt import Barrier

    x = (rng.standard_normal((8, 1024)) * 4.0).astype(np.float32)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    for rows, stage_row, barriers in ((1, False, 0), (4, False, 0), (2, True, None)):
        Y, s, kernel = _softmax_warps(rows, stage_row)
        nodes = list(walk(kernel))
        assert sum(isinstance(n, WarpShuffle) for n in nodes) == 2  # the max's slices, the sum's
        if barriers is not None:
            assert sum(isinstance(n, Barrier) for n in nodes) == barriers
        else:
            assert any(isinstance(n, Barrier) for n in nodes)
        report = tc.check(s)
        assert report.legal
        # a row's threads (threadIdx.y) compute its slices once, though two loops bind them
        assert all(r.factor == 1 for r in report.recomputation), str(report)
        np.testing.assert_allclose(run(s, [x]), want, rtol=1e-5, atol=1e-7)


def test_shuffles_only_where_a_row_is_one_warp():
    """64 threads a row (two warps) or the first thread adding the slices: shared memory
    and barriers, no shuffle."""
    from tcomp.ir.expr import WarpShuffle

    for threads, combine in ((64, "every_thread"), (32, "one_thread")):
        _, _, kernel = _softmax_warps(1, False, threads=threads, combine=combine)
        assert not any(isinstance(n, WarpShuffle) for n in walk(kernel))


def test_slices_read_a_vector_at_a_time_match_float64(rng):
    """``vector_slices``: a slice a thread, read ``vector`` elements at a time into as many
    accumulators, then added into the thread's slice; a row (1000) that threads x vector
    does not divide is padded; with a warp a row and every thread adding, through
    shuffles."""
    from tcomp.ir.expr import WarpShuffle

    x = (rng.standard_normal((4, 1000)) * 4.0).astype(np.float32)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    for threads, combine, rows in ((64, "one_thread", 1), (32, "every_thread", 2)):
        Y = softmax.algorithm(4, 1000)
        s = tc.create_schedule(Y)
        softmax.schedule(s, Y, threads=threads, vector=4, combine=combine, rows=rows, vector_slices=True)
        assert tc.check(s).legal
        (kernel,) = tc.lower(s).kernels
        assert any(isinstance(n, WarpShuffle) for n in walk(kernel)) == (threads == 32)
        np.testing.assert_allclose(run(s, [x]), want, rtol=1e-5, atol=1e-7)


_SHARED_LOADS = """
import json, sys
sys.path.insert(0, "examples")
import rmsnorm, tcomp as tc
from tcomp.codegen.ptx import ptx_report
counts = {}
for vector_slices in (False, True):
    out = rmsnorm.algorithm(7239, 4096)
    s = tc.create_schedule(out)
    rmsnorm.schedule(s, out, vector_slices=vector_slices)
    (r,) = ptx_report(tc.lower(s))
    counts[str(vector_slices)] = dict(wide=r.ptx.count("ld.shared.v4"), narrow=r.ptx.count("ld.shared.u16"),
                                      spills=r.spill_stores + r.spill_loads)
print(json.dumps(counts))
"""


def test_vector_slices_read_the_staged_row_in_16_byte_loads():
    """RMSNorm's bf16 row of 4096, 64 threads and 8 lanes: with ``vector_slices`` the
    slices read the staged row in 16-byte shared loads instead of 2-byte ones."""
    import shutil

    import pytest

    from workloads import json_from_a_process_without_the_simulator

    if shutil.which("ptxas") is None:
        pytest.skip("needs CUDA's ptxas on the PATH")
    counts = json_from_a_process_without_the_simulator(["-c", _SHARED_LOADS])
    assert counts["False"]["narrow"] > 0 and counts["True"]["narrow"] == 0, counts
    assert counts["True"]["wide"] > counts["False"]["wide"], counts
    assert counts["True"]["spills"] == 0


def test_many_slices_are_added_in_groups_first(rng):
    """Over 64 slices (128 threads, a slice each) a statistic's slices are added in 32
    interleaved groups by 32 threads, then the groups: a third rfactor'd stage per
    statistic, and the same result as float64 (a sum, a max, one thread or every thread
    adding the groups)."""
    from tcomp.search.tiling.rows import SLICE_GROUPS

    x = (rng.standard_normal((2, 2048)) * 4.0).astype(np.float32)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    for threads, vector_slices, combine in ((128, True, "one_thread"), (256, False, "every_thread")):
        Y = softmax.algorithm(2, 2048)
        s = tc.create_schedule(Y)
        softmax.schedule(s, Y, threads=threads, vector=4, combine=combine, vector_slices=vector_slices, slices=128)
        assert tc.check(s).legal
        groups = [st for st in s.stages if st.tensor.name.endswith("_rf3") or st.tensor.name.endswith("_rf2")]
        extents = sorted(st.tensor.shape[0] for st in groups)
        assert SLICE_GROUPS in extents, extents
        np.testing.assert_allclose(run(s, [x]), want, rtol=1e-5, atol=1e-7)


def test_the_slices_a_guarded_thread_adds_are_guarded_once_outside_their_loop(rng):
    """A long row on 128 threads adds its 128 slices in groups: the first 32 threads each
    add a group, so their loop's stores carry ``threadIdx.x < 32``. The code tests that
    once, before the loop: tested in every iteration it is a branch between the loads
    (on the H100 the groups were added one shared-load latency apart). The sums are
    unchanged."""
    import re

    from tcomp.codegen import program_source

    Y = softmax.algorithm(2, 2048)
    s = tc.create_schedule(Y)
    softmax.schedule(s, Y, threads=128, combine="every_thread")
    kernel = program_source(tc.lower(s), simulator=False).split("@cuda.jit(cache=True)")[1]
    guard_then_loop = re.findall(r"\n( *)if \((p\w*) < _u32_32\):\n\1    for p\w* in range\(_u32_\d+\):", kernel)
    assert len(guard_then_loop) == 2  # the groups of the max and of the sum
    assert not re.search(r"for p\w* in range\(_u32_\d+\):\n *if \(p\w* < _u32_32\):", kernel)
    x = (rng.standard_normal((2, 2048)) * 4.0).astype(np.float32)
    np.testing.assert_allclose(run(s, [x]), tc.evaluate(Y, {tc.inputs(Y)[0]: x}), rtol=1e-5, atol=1e-8)


@pytest.mark.gpu
def test_a_long_row_softmax_matches_on_the_gpu(rng):
    """The example's schedule at rows of 32768: 1024 threads, the 128 KB row staged, the
    1024 slices added in groups with their guard outside the loop."""
    Y = softmax.algorithm(4, 32768)
    s = tc.create_schedule(Y)
    softmax.schedule(s, Y)
    x = (rng.standard_normal((4, 32768)) * 4.0).astype(np.float32)
    np.testing.assert_allclose(run(s, [x]), tc.evaluate(Y, {tc.inputs(Y)[0]: x}), rtol=1e-5, atol=1e-9)


def test_the_examples_default_schedules_take_rows_shorter_than_their_threads_vectors(rng):
    """256 threads of 4-element vectors do not fit a row of 1000 (250 threads would not be
    whole warps for the tree): the default takes 128 threads there instead of refusing
    the row."""
    x = (rng.standard_normal((2, 1000)) * 4.0).astype(np.float32)
    Y = softmax.algorithm(2, 1000)
    s = tc.create_schedule(Y)
    softmax.schedule(s, Y)
    assert [k.block for k in tc.lower(s).kernels] == [(128, 1, 1)]
    np.testing.assert_allclose(run(s, [x]), tc.evaluate(Y, {tc.inputs(Y)[0]: x}), rtol=1e-5, atol=1e-8)
