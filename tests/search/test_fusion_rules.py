"""Fusion as rules (tcomp/search/fusion/) and tiling rules sized by the target
(tcomp/search/tiling/): the built-in inline / epilogue / staged choices, a fusion rule
registered from a test that groups stages as no built-in rule can, and tilings that
follow the shared memory, registers, SMs and instructions of the GPU a space is made for."""

import random
import sys
from pathlib import Path

import pytest

import tcomp as tc
from tcomp.search.fusion import FusionRule, register_fusion_rule, registered_fusion_rules, unregister_fusion_rule
from tcomp.search.space import Space
from tcomp.search.tiling import BLOCK_TILING
from tcomp.search.tiling.register_tiles import tile_shared_bytes
from tcomp.target import H200, RTX_A6000
from workloads import check_float, run

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import gemm_bf16  # noqa: E402
import matmul_silu_quant  # noqa: E402
import sgemm_ladder  # noqa: E402


class InlineIntoEveryReader(FusionRule):
    """An elementwise stage read by several elementwise stages, substituted into all of
    them, where all of them are computed in one kernel (which the built-in rules cannot
    propose: a stage with two consumers always had a kernel of its own)."""

    name = "inline_into_every_reader_test"

    def proposes(self, stage, space):
        return (not stage.reduction and len(stage.consumers) > 1
                and not any(space.stages[c].reduction for c in stage.consumers))

    def host(self, stage, space):
        return stage.consumers[-1]  # the last reader: the others must be in its kernel

    def valid(self, stage, choice, space):
        return len({space.kernel_of(c, choice) for c in stage.consumers}) == 1

    def apply(self, s, stage, group):
        s[stage].compute_inline()


@pytest.fixture
def every_reader_rule():
    rule = register_fusion_rule(InlineIntoEveryReader())
    yield rule
    unregister_fusion_rule(rule)


def _diamond(M=16, N=48):
    """Y = silu(A) read by two stages: Z = Y + 1 and P = Z * Y."""
    A = tc.placeholder((M, N), "float32", name="A")
    Y = tc.compute((M, N), lambda i, j: tc.silu(A[i, j]), name="Y")
    Z = tc.compute((M, N), lambda i, j: Y[i, j] + 1.0, name="Z")
    return tc.compute((M, N), lambda i, j: Z[i, j] * Y[i, j], name="P")


def _partitions(space):
    return {frozenset(frozenset(g) for g in p) for p in space.partitions()}


def test_the_built_in_fusion_rules_propose_inline_epilogue_and_staged():
    assert [r.name for r in registered_fusion_rules()][:3] == ["inline", "fused", "staged"]
    space = Space(matmul_silu_quant.algorithm(32, 32, 16))
    assert space.options == {"C": ("fused", "root"), "Y": ("inline", "root")}
    fused = space.groups((("C", "fused"), ("Y", "inline")))
    assert [(g.anchor, g.members) for g in fused] == [("Q", (("C", "fused"), ("Y", "inline")))]
    assert fused[0].fused == ("C",) and fused[0].inlined == ("Y",) and fused[0].reductions == ("C",)
    assert _partitions(space) == {frozenset({frozenset({"C", "Y", "Q"})}), frozenset({frozenset({"C", "Y"}),
                                                                                        frozenset({"Q"})}),
                                  frozenset({frozenset({"C"}), frozenset({"Y", "Q"})}),
                                  frozenset({frozenset({"C"}), frozenset({"Y"}), frozenset({"Q"})})}
    A = tc.placeholder((16, 32), "float16", name="A")
    W = tc.placeholder((32, 16), "float16", name="W")
    Ab = tc.compute((16, 32), lambda i, k: tc.cast(A[i, k] * 2.0, "float16"), name="Ab")
    k = tc.reduce_axis(32, name="k")
    C = tc.compute((16, 16), lambda i, j: tc.sum(tc.cast(Ab[i, k], "float32") * tc.cast(W[k, j], "float32"),
                                                 axis=k), name="C")
    assert Space(C).options == {"Ab": ("staged", "root")}


def test_without_fusion_rules_every_stage_is_its_own_kernel():
    space = Space(matmul_silu_quant.algorithm(32, 32, 16), fusion_rules=[])
    assert space.options == {"C": ("root",), "Y": ("root",)}
    assert _partitions(space) == {frozenset({frozenset({"C"}), frozenset({"Y"}), frozenset({"Q"})})}


def test_a_stage_with_two_readers_stays_at_root_without_a_rule_for_it():
    space = Space(_diamond())
    assert space.options == {"Y": ("root",), "Z": ("inline", "root")}
    assert frozenset({frozenset({"Y", "Z", "P"})}) not in _partitions(space)


def test_a_registered_fusion_rule_puts_a_stage_and_both_its_readers_into_one_kernel(every_reader_rule, rng):
    out = _diamond()
    space = Space(out)
    assert space.options == {"Y": (every_reader_rule.name, "root"), "Z": ("inline", "root")}
    one_kernel = ((("Y", every_reader_rule.name), ("Z", "inline")))
    # Y's readers in two kernels: the rule refuses the choice
    assert (("Y", every_reader_rule.name), ("Z", "root")) not in space.tileable_fusions()
    assert one_kernel in space.tileable_fusions()
    assert frozenset({frozenset({"Y", "Z", "P"})}) in _partitions(space)
    (group,) = space.groups(one_kernel)
    assert group.anchor == "P" and group.members_by(every_reader_rule.name) == ("Y",)

    draw = random.Random(0)
    points = [p for p in (space.sample(draw, one_kernel) for _ in range(8)) if p is not None]
    assert points and all(space.contains(p) for p in points)
    for point in points:
        s = space.schedule(point)
        assert tc.check(s).legal
        assert [k.name for k in tc.lower(s).kernels] == ["k_P"]
    (A,) = space.schedule(points[0]).placeholders
    a = rng.standard_normal((16, 48)).astype("float32")
    got = run(space.schedule(points[0]), [a])
    check_float(got, tc.evaluate(out, {A: a}))


def test_a_fusion_rule_name_is_registered_once(every_reader_rule):
    with pytest.raises(ValueError, match="registered already"):
        register_fusion_rule(InlineIntoEveryReader())

    class Root(FusionRule):
        name = "root"

    with pytest.raises(ValueError, match="registered already"):
        register_fusion_rule(Root())


SMALL_SHARED = H200.replace(name="h200_16k", smem_per_block=16 * 1024)


def test_the_tiling_rules_take_shared_memory_from_the_target():
    """The mma.sync rule's tilings of a 16-bit product: fewer, each within 16 KB, on a
    target with 16 KB of shared memory per block."""
    out = gemm_bf16.algorithm(256, 256, 128)

    def mma_tilings(target):
        space = Space(out, target=target)
        (group,) = space.groups(space.tileable_fusions()[0])
        rule = next(r for r in space.rules_for(group) if r.name == "mma_tiling")
        return [dict(p) for p in space.valid_params(rule, group)]

    def shared(p):
        return (p["BM"] * (p["BK"] + 8) + p["BK"] * (p["BN"] + 8)) * 2 * max(1, p["stages"])

    full, limited = mma_tilings(H200), mma_tilings(SMALL_SHARED)
    assert 0 < len(limited) < len(full)
    assert all(shared(p) <= 16 * 1024 for p in limited) and max(shared(p) for p in full) > 16 * 1024
    assert all(p in full for p in limited)


def test_the_block_tiling_takes_shared_memory_from_the_target():
    out = sgemm_ladder.algorithm(256, 256, 256)
    large = dict(BM=128, BN=128, BK=32, TM=8, TN=8, transpose_a=False, vector=4, double_buffer=True, pipeline=0,
                 k_unroll=1, fragment_k=1, split_k=1)  # 64 KB of tiles
    small = {**large, "BM": 64, "BN": 64, "BK": 16, "TM": 4, "TN": 4, "double_buffer": False}  # 8 KB
    assert tile_shared_bytes(64, 64, 16, small) <= 16 * 1024 < tile_shared_bytes(128, 128, 32, large)
    for target, fits_large in ((H200, True), (SMALL_SHARED, False)):
        space = Space(out, target=target)
        (group,) = space.groups(())  # NOTE: not tileable_fusions(), which enumerates every tiling
        assert BLOCK_TILING.valid(group, space, large) == fits_large
        assert BLOCK_TILING.valid(group, space, small)


def test_the_warpgroup_rule_takes_registers_and_instructions_from_the_target():
    out = gemm_bf16.algorithm(256, 256, 128)

    def wgmma_tilings(target):
        space = Space(out, target=target)
        (group,) = space.groups(space.tileable_fusions()[0])
        rules = {r.name: r for r in space.rules_for(group)}
        return [dict(p) for p in space.valid_params(rules["wgmma_tiling"], group)] if "wgmma_tiling" in rules else []

    full = wgmma_tilings(H200)
    fewer = wgmma_tilings(H200.replace(name="h200_half_registers", regs_per_sm=32768))
    assert 0 < len(fewer) < len(full)
    assert all(128 * p["BM"] // 64 * (p["BN"] // 2 + 56) <= 32768 for p in fewer)
    assert wgmma_tilings(RTX_A6000) == []  # no wgmma before compute capability 9.0


def test_split_k_follows_the_targets_sm_count():
    A = tc.placeholder((64, 256), "float32", name="A")
    W = tc.placeholder((256, 64), "float32", name="W")
    k = tc.reduce_axis(256, name="k")
    C = tc.compute((64, 64), lambda i, j: tc.sum(A[i, k] * W[k, j], axis=k), name="C")

    def rules(target):
        space = Space(C, target=target)
        (group,) = space.groups(space.tileable_fusions()[0])
        return [r.name for r in space.rules_for(group)]

    assert "split_k" in rules(H200)  # 4 x 2 tiles of 16 x 32 leave most of 132 SMs idle
    assert "split_k" not in rules(H200.replace(name="four_sms", sms=4))


def test_autoschedule_builds_its_space_for_the_target_it_is_given(monkeypatch):
    import tcomp.search.search as search

    made = []

    class Recording(Space):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self.target)
            raise RuntimeError("stop after the space")

    monkeypatch.setattr(search, "Space", Recording)
    with pytest.raises(RuntimeError, match="stop after the space"):
        tc.autoschedule(sgemm_ladder.algorithm(32, 32, 32), trials=0, target="a6000", model_only=True)
    assert made == [RTX_A6000]


def test_a_fusion_rule_whose_hosts_go_round_is_refused():
    class HostsItself(FusionRule):
        name = "hosts_itself_test"

        def proposes(self, stage, space):
            return True

        def host(self, stage, space):
            return stage.name

    space = Space(_diamond(), fusion_rules=[HostsItself()])
    with pytest.raises(tc.TcompError, match="go round in a circle: Z -> Z"):
        space.groups((("Y", "root"), ("Z", "hosts_itself_test")))
