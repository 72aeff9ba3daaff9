"""The polyhedral model itself (tcomp.poly): the algorithm's statements, accesses, order
and dependences; the scheduled program's order, coordinates and storage; and the speed
of tc.check on the fused FFN pipeline."""

import time

import islpy as isl
import numpy as np
import pytest

import tcomp as tc
from legality_cases import examples_module, matmul_act, rowmax_quant
from tcomp import poly


def _matmul_silu():
    A, W, C, Y = matmul_act("silu", 4, 5, 3)
    return A, W, C, Y, tc.create_schedule(Y)


def test_algorithm_statements_domains_and_accesses():
    A, W, C, Y, s = _matmul_silu()
    alg = poly.algorithm(s)
    assert [st.name for st in alg.statements] == ["C_init", "C_update", "Y"]
    upd = alg.statement("C_update")
    assert upd.domain.is_equal(isl.Set("{ C_update[i, j, k] : 0 <= i < 4 and 0 <= j < 5 and 0 <= k < 3 }"))
    assert upd.write.is_equal(isl.Map("{ C_update[i, j, k] -> C[i, j] : 0 <= i < 4 and 0 <= j < 5 and 0 <= k < 3 }"))
    ((tensor, read),) = alg.statement("Y").reads
    assert tensor is C and read.is_equal(isl.Map("{ Y[i, j] -> C[i, j] : 0 <= i < 4 and 0 <= j < 5 }"))


def test_value_flow_of_a_reduction_is_its_last_update():
    A, W, C, Y, s = _matmul_silu()
    flow = poly.value_flow(poly.algorithm(s), C)
    assert flow.is_equal(isl.UnionMap("{ C_update[i, j, k = 2] -> Y[i, j] : 0 <= i < 4 and 0 <= j < 5 }"))


def test_memory_based_dependences():
    A, W, C, Y, s = _matmul_silu()
    deps = poly.dependences(poly.algorithm(s))
    dom = "0 <= i < 4 and 0 <= j < 5"
    assert deps.flow.is_subset(deps.raw)
    # every update of C[i, j] is read by Y[i, j] in the memory-based sense
    assert isl.UnionMap(f"{{ C_update[i, j, k] -> Y[i, j] : {dom} and 0 <= k < 3 }}").is_subset(deps.raw)
    # the accumulator: each update overwrites the earlier ones and what they read
    chain = isl.UnionMap(f"{{ C_update[i, j, k] -> C_update[i, j, k2] : {dom} and 0 <= k < k2 < 3 }}")
    assert chain.is_subset(deps.waw) and chain.is_subset(deps.war)
    assert isl.UnionMap(f"{{ C_init[i, j] -> C_update[i, j, k] : {dom} and 0 <= k < 3 }}").is_subset(deps.waw)


def test_inlined_stage_is_substituted_and_keeps_its_reads():
    A, W, C, Y, s = _matmul_silu()
    Q = tc.compute(Y.shape, lambda i, j: tc.quantize(Y[i, j], 0.05, "int8"), name="Q")
    s = tc.create_schedule(Q)
    s[Y].compute_inline()
    alg = poly.algorithm(s)
    assert [st.name for st in alg.statements] == ["C_init", "C_update", "Q"]
    ((tensor, _),) = alg.statement("Q").reads
    assert tensor is C


def test_scheduled_order_of_a_producer_computed_at_a_consumer_loop():
    A, W, C, Y, s = _matmul_silu()
    i, j = s[Y].axis
    s[C].compute_at(s[Y], j)
    prog = poly.scheduled_program(s)
    upd, y = prog.statement("C_update"), prog.statement("Y")
    assert [lp.label for lp in upd.loops] == ["i", "j", "i", "j", "k"]
    assert upd.own == 3 and y.own == 2
    # the last update of C[1, 2] comes right before Y[1, 2] reads it, in the same iteration
    u = isl.Set("{ C_update[1, 2, 0, 0, 2] }").apply(upd.time)
    r = isl.Set("{ Y[1, 2] }").apply(y.time)
    assert u.lex_lt_set(r).is_equal(isl.Map.from_domain_and_range(u, r))
    # ... and in a local buffer of one element, a fresh one per iteration of j
    assert upd.write.range().is_equal(isl.Set("{ C_local[m0, m1, m2, m3, m4, m5, e0, e1] : "
                                              "m0 = 0 and m1 = 0 and m2 = 0 and m3 = 0 and m4 = 0 and m5 = 0 "
                                              "and e0 = 0 and e1 = 0 }"))


def test_scheduled_coordinates_of_bound_loops():
    X, R, Q = rowmax_quant(3, 16)
    s = tc.create_schedule(Q)
    i, j = s[Q].axis
    s[Q].bind(i, "blockIdx.x")
    s[Q].bind(j, "threadIdx.x")
    s[R].compute_at(s[Q], i)
    s[R].set_scope("shared")
    prog = poly.scheduled_program(s)
    q, r = prog.statement("Q"), prog.statement("R_update")
    assert isl.Set("{ Q[2, 5] }").apply(q.coords).is_equal(isl.Set("{ [2, -1, -1, 5, -1, -1] }"))
    # the row max is computed once per block, by thread 0 alone (lowering's single
    # writer of a shared accumulator that no thread loop encloses)
    assert isl.Set("{ R_update[2, 0, 7] }").apply(r.coords).is_equal(isl.Set("{ [2, -1, -1, 0, -1, -1] }"))
    assert "threadIdx.x" not in r.uniform
    assert "if (threadIdx_x == _u32_0):" in tc.build(s).source
    # a barrier follows the shared R, another ends each iteration of i (before R is refilled)
    assert [b.after for b in prog.barriers] == ["after R is computed", "at the end of loop i"]


def test_legality_returns_records():
    A, W, C, Y, s = _matmul_silu()
    (k,) = s[C].reduce_axis
    s[Y].reverse_compute_at(s[C], k)
    result = poly.legality(s)
    assert not result.legal
    (v,) = result.violations
    assert (v.kind, v.consumer, v.producer, v.tensor) == ("flow", "Y", "C", "C")
    assert v.stage is s[Y] and v.bound is None
    assert v.hidden and "wasted-work factor 3x" in v.hidden
    assert v.alternatives == ("s['Y'].reverse_compute_at(s['C'], i)", "s['Y'].reverse_compute_at(s['C'], j)",
                              "s['Y'].compute_root()")
    assert poly.is_legal(tc.create_schedule(Y))


def _without(prog, name, keep: str):
    """``prog`` with statement ``name`` cut to the instances where ``keep`` holds (a
    scheduled program that forgets part of its work)."""
    import dataclasses

    def cut(inst):
        dims = ", ".join(f"x{n}" for n in range(inst.domain.dim(isl.dim_type.set)))
        return inst.domain.intersect(isl.Set(f"{{ {name}[{dims}] : {keep} }}"))

    statements = tuple(dataclasses.replace(st, domain=cut(st), origin=st.origin.intersect_domain(cut(st)))
                       if st.name == name else st for st in prog.statements)
    return dataclasses.replace(prog, statements=statements)


def test_every_output_element_must_be_computed():
    A, W, C, Y, s = _matmul_silu()
    alg, prog = poly.algorithm(s), poly.scheduled_program(s)
    assert poly.coverage_violations(s, alg, prog) == []
    (v,) = poly.coverage_violations(s, alg, _without(prog, "Y", "x0 < 3"))
    assert v.kind == "coverage" and v.tensor == "Y"
    assert "no instance of the scheduled program computes Y[3, 0]" in v.message()
    assert "Y leaves part of the output Y uncomputed" in v.message()
    assert "missing: { Y[i = 3, j] : 0 <= j <= 4 }" in v.message()


def test_every_term_of_an_output_reduction_must_be_added():
    A, W, C, Y, s = _matmul_silu()
    s = tc.create_schedule(C)
    alg, prog = poly.algorithm(s), poly.scheduled_program(s)
    assert poly.coverage_violations(s, alg, prog) == []
    (v,) = poly.coverage_violations(s, alg, _without(prog, "C_update", "x2 > 0"))
    assert "computes the term k=0 of C[0, 0]" in v.message(), v.message()
    # an intermediate is not an output: a missing element of it that somebody reads is a
    # flow violation, one that nobody reads does not matter
    s = tc.create_schedule(Y)
    alg, prog = poly.algorithm(s), poly.scheduled_program(s)
    assert poly.coverage_violations(s, alg, _without(prog, "C_update", "x2 > 0")) == []


def test_non_affine_index_is_over_approximated(rng):
    X = tc.placeholder((4, 6), "float32", name="X")
    P = tc.compute((4, 6), lambda i, j: X[i, j] + 1.0, name="P")
    O = tc.compute((4, 6), lambda i, j: P[(i * j) % 4, j] * 2.0, name="O")
    s = tc.create_schedule(O)
    assert tc.check(s).legal
    x = rng.standard_normal((4, 6)).astype(np.float32)
    out = np.zeros((4, 6), np.float32)
    tc.build(s)(x, out)
    np.testing.assert_array_equal(out, tc.evaluate(O, {X: x}))


# NOTE: "schedule" takes 4-5 s alone on a 2-core machine, 8-12 s while another suite runs beside it
@pytest.mark.parametrize("schedule, placed, seconds", [("cuda_cores", 5, 1.0), ("schedule", 4, 16.0)])
def test_ffn_check_takes_under_a_second(schedule, placed, seconds):
    """tc.check on the fused FFN pipeline (examples/ffn_bf16.py at 1024 x 12288 x
    4096). ``cuda_cores``: 128 x 128 tiles, 8 x 8 per thread, k steps of 8 through
    double-buffered shared tiles and register copies, bound to blocks and threads, the
    epilogue inlined. ``schedule``: wgmma blocks, cp.async rings of vectorized fills, the
    int8 outputs staged in a shared tile (the fourth stage placed in a block), which the
    dataflow analysis took about 4 s for with mma.sync's warp tiles (NOTE: 0.6 s with
    scalar fills; the vectorized fills' extra split is what costs)."""
    ffn = examples_module("ffn_bf16")
    out = ffn.algorithm()
    s = tc.create_schedule(out)
    getattr(ffn, schedule)(s, out)
    times = []
    for _ in range(3 if seconds < 2 else 1):
        t0 = time.perf_counter()
        report = tc.check(s)
        times.append(time.perf_counter() - t0)
    print(f"tc.check on the fused FFN schedule: best {min(times):.3f} s of {len(times)}")
    assert report.legal and len(report.recomputation) == placed
    assert min(times) < seconds


def test_swiglu_check_of_the_second_phase_is_quick():
    """The quantizing kernel reads all of Z, which the tensor-core kernel before it writes
    through fused lane and warp indices. That all of Z is written is proven by counting
    (one injective writer of as many instances as Z has elements): subtracting the written
    locations, whose indices divide the fused indices, took 420 s here at this shape."""
    sw = examples_module("swiglu_fp8")
    out = sw.algorithm()
    s = tc.create_schedule(out)
    sw.schedule(s, out)
    t0 = time.perf_counter()
    report = tc.check(s)
    seconds = time.perf_counter() - t0
    print(f"tc.check on SwiGLU + per-row fp8 at 1024 x 12288 x 4096: {seconds:.1f} s")
    assert report.legal and seconds < 30


def test_the_counting_proof_of_a_complete_write():
    """``_maps_onto_box`` says yes only for an injective writer of exactly the box's size
    whose image lies in the box; the exact subtraction stays the fallback."""
    from dataclasses import replace

    from tcomp.poly.counting import box_set as _box, maps_onto_box as _maps_onto_box
    from tcomp.poly.flow import _written_before

    sw = examples_module("swiglu_fp8")
    out = sw.algorithm(32, 64, 32)
    s = tc.create_schedule(out)
    sw.schedule(s, out)
    prog = poly.scheduled_program(s)
    (writer,) = [w for w in prog.statements if w.name == "Z"]
    name = writer.write.get_tuple_name(isl.dim_type.out)
    assert _maps_onto_box(writer, writer.write, _box(name, (32, 64)), 32 * 64)
    assert not _maps_onto_box(writer, writer.write, _box(name, (32, 65)), 32 * 65)  # a column nobody writes
    # every instance writes row 0: not injective, so no proof (and the subtraction says no)
    row_zero = writer.write.intersect_domain(writer.domain).apply_range(
        isl.Map(f"{{ {name}[i, j] -> {name}[0, j] }}"))
    collapsed = replace(writer, write=row_zero)
    assert not _maps_onto_box(collapsed, collapsed.write, _box(name, (32, 64)), 32 * 64)
    read = isl.Map(f"{{ R_rf_update[i, j] -> {name}[i, j] : 0 <= i < 32 and 0 <= j < 64 }}")
    assert _written_before(read, [writer], prog.storage[s["Z"].tensor])
    assert not _written_before(read, [collapsed], prog.storage[s["Z"].tensor])


@pytest.mark.parametrize("M, N, persistent", [(192, 128, 4), (200, 136, 5)])
def test_guarded_instances_are_counted_as_isl_counts_them(M, N, persistent):
    """``exact_count`` of the output's store under persistent blocks in groups of block
    rows (the rounds past the last tile guarded off; at 200 x 136 also the partial tiles'
    rows and columns) equals isl's count of the points, and the product of the extents
    where no guard cuts."""
    from tcomp.poly.counting import exact_count
    from tcomp.search.tiling import wgmma_tiles

    gemm = examples_module("gemm_bf16")
    out = gemm.algorithm(M, N, 64)
    s = tc.create_schedule(out)
    wgmma_tiles(s, out, "C", "A", "W", BM=64, BN=64, BK=64, stages=2, group_rows=2, persistent=persistent)
    (store,) = [w for w in poly.scheduled_program(s).statements if w.name == "C"]
    assert store.guarded
    assert exact_count(store) == store.domain.count_val().to_python() == M * N
    s = tc.create_schedule(out)
    wgmma_tiles(s, out, "C", "A", "W", BM=64, BN=64, BK=64, stages=2)
    (store,) = [w for w in poly.scheduled_program(s).statements if w.name == "C"]
    assert exact_count(store) == store.domain.count_val().to_python()


@pytest.mark.timeout(120)
def test_persistent_blocks_over_a_large_output_check_in_seconds():
    """4096^3 in 128 x 256 tiles on 132 persistent blocks in groups of 16 block rows (the
    tile index a sum of divisions): the bounds and coverage proofs avoid isl's
    subtraction, which took minutes here (a hang fails the test's timeout)."""
    from tcomp.search.tiling import wgmma_tiles

    gemm = examples_module("gemm_bf16")
    out = gemm.algorithm(4096, 4096, 4096)
    s = tc.create_schedule(out)
    wgmma_tiles(s, out, "C", "A", "W", BM=128, BN=256, BK=64, stages=4, group_rows=16, persistent=132)
    assert tc.check(s).legal


@pytest.mark.parametrize("shape", ["M=64,N=64,K=16"])
def test_cli_check_prints_the_report(shape, capsys):
    from pathlib import Path

    from tcomp import cli

    example = Path(__file__).resolve().parents[2] / "examples" / "matmul_silu_quant.py"
    assert cli.main(["check", str(example), "--shape", shape]) == 0
    out = capsys.readouterr().out
    assert "legal: every dependence" in out and "reassociation: none" in out
    assert "recomputation: C computed at Q" in out and "checked in" in out


def test_cli_check_illegal_schedule_file(tmp_path, capsys):
    from tcomp import cli

    wl = tmp_path / "wl.py"
    wl.write_text(
        "import tcomp as tc\n\n\n"
        "def algorithm(M=8, N=8, K=8):\n"
        "    A = tc.placeholder((M, K), 'float32', name='A')\n"
        "    W = tc.placeholder((K, N), 'float32', name='W')\n"
        "    k = tc.reduce_axis(K, name='k')\n"
        "    C = tc.compute((M, N), lambda i, j: tc.sum(A[i, k] * W[k, j], axis=k), name='C')\n"
        "    return tc.compute((M, N), lambda i, j: tc.silu(C[i, j]), name='Y')\n")
    sched = tmp_path / "sched.py"
    sched.write_text(
        "def schedule(s, out):\n"
        "    (k,) = s['C'].reduce_axis\n"
        "    s['Y'].reverse_compute_at(s['C'], k)\n")
    assert cli.main(["check", str(wl), "--schedule", str(sched)]) == 1
    out = capsys.readouterr().out
    assert "illegal schedule" in out
    assert f"{sched}:3 is illegal" in out
    assert "counterexample: Y[0, 0] at k=0 reads C[0, 0], which C still updates at k=1..7" in out


def _lowered_counts(s):
    """Barriers, and stores into the buffers of stages (not into the registers that a
    double-buffered tile is staged through), in the nests that lowering builds (before the
    kernel passes: loop partitioning copies a loop's body)."""
    from tcomp.ir.stmt import Barrier, Store
    from tcomp.ir.visitor import walk
    from tcomp.lower import lower

    names = {st.name for st in s.stages}
    nodes = [n for k in lower(s, passes=()).kernels for n in walk(k.body)]
    return (sum(isinstance(n, Barrier) for n in nodes),
            sum(isinstance(n, Store) and n.buffer.name in names for n in nodes))


def test_scheduled_program_mirrors_the_lowered_nest():
    """The model describes the nest lowering builds: as many statements as stores, and the
    barriers where lowering puts them (keep tcomp.poly.scheduled in step with lower/nest.py)."""
    from legality_cases import ILLEGAL, LEGAL

    makes = [make for _, make in LEGAL] + [make for make in ILLEGAL if make().outcome != "refused"]
    for make in makes:
        s = make().s
        prog = poly.scheduled_program(s)
        barriers, stores = _lowered_counts(s)
        assert (len(prog.barriers), len(prog.statements)) == (barriers, stores), make
