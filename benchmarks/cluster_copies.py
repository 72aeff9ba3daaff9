"""Thread-block clusters for the TMA GEMM probe (``tma_gemm_probe.py``'s ``ws-mc`` variant):
the few instructions a pair of blocks needs to share one operand's tiles, and a launch
with a cluster shape. GPU only (no simulator models): a probe of whether the feature pays
before the compiler takes it.

- ``tma_load_2d_multicast``: ``cp.async.bulk.tensor...multicast::cluster``, one copy that
  lands the box at the same shared offset of every block in ``mask`` and completes the
  barrier at the same offset in each;
- ``cluster_arrive``: ``mbarrier.arrive`` on the barrier at ``bars[index]``'s offset in
  block ``rank`` of the cluster (``mapa`` gives its address in the cluster's window);
- ``mbarrier_wait_cluster``: a spin on a barrier's phase that other blocks arrive on.

Arrivals and waits keep the instructions' default scope (release and acquire within the
block), as CUTLASS's cluster barriers do (with ``.release.cluster`` and
``.acquire.cluster`` on every slot's arrivals and waits the probe took 2.5x the time of
the same kernel without clusters on an H100, BENCHMARKS.md).
- ``cluster_rank``, ``cluster_sync`` (``barrier.cluster`` arrive then wait, every thread).
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core.extending import intrinsic

from tcomp.codegen.narrow_floats import _asm
from tcomp.codegen.warp_mma import _as_u32, _global_address, _shared_address

_I16, _I32, _I64 = ir.IntType(16), ir.IntType(32), ir.IntType(64)
_VOID = ir.VoidType()


@intrinsic
def cluster_rank(typingctx):
    """This block's rank in its cluster (``%cluster_ctarank``)."""
    def codegen(context, builder, signature, args):
        return _asm(builder, _I32, [], "mov.u32 $0, %cluster_ctarank;", "=r")

    return types.uint32(), codegen


@intrinsic
def cluster_sync(typingctx):
    """Every thread of every block of the cluster meets here (release, then acquire).

    Not the ``.aligned`` form: the kernel's end is reached by a warp whose first lane ran
    the producer's loop while the others went ahead, and an aligned cluster barrier in a
    divergent warp is undefined (the probe hung there)."""
    def codegen(context, builder, signature, args):
        _asm(builder, _VOID, [], "barrier.cluster.arrive.release; barrier.cluster.wait.acquire;",
             "~{memory}", side_effect=True)
        return context.get_dummy_value()

    return types.void(), codegen


@intrinsic
def cluster_arrive(typingctx, bars, index, rank):
    """One arrival on ``bars[index]`` of block ``rank`` of the cluster."""
    def codegen(context, builder, signature, args):
        local = _shared_address(context, builder, signature.args[0], args[0], args[1])
        peer = _as_u32(context, builder, args[2], signature.args[2])
        _asm(builder, _VOID, [local, peer],
             "{ .reg .b32 remote; mapa.shared::cluster.u32 remote, $0, $1; "
             "mbarrier.arrive.shared::cluster.b64 _, [remote]; }", "r,r,~{memory}", side_effect=True)
        return context.get_dummy_value()

    return types.void(bars, index, rank), codegen


@intrinsic
def mbarrier_wait_cluster(typingctx, bars, index, parity):
    """Spin until the phase of ``bars[index]`` of ``parity`` has completed (arrivals from
    any block of the cluster count)."""
    def codegen(context, builder, signature, args):
        address = _shared_address(context, builder, signature.args[0], args[0], args[1])
        phase = _as_u32(context, builder, args[2], signature.args[2])
        _asm(builder, _VOID, [address, phase],
             "{ .reg .pred done; WAIT: mbarrier.try_wait.parity.shared::cta.b64 done, [$0], $1; "
             "@!done bra WAIT; }", "r,r,~{memory}", side_effect=True)
        return context.get_dummy_value()

    return types.void(bars, index, parity), codegen


@intrinsic
def tma_load_2d_multicast(typingctx, smem, index, tmap, x, y, bars, bar_index, mask):
    """The box of ``tmap`` at column ``x``, row ``y`` into ``smem[index]`` of every block
    of the cluster whose bit is set in ``mask``, completing on ``bars[bar_index]`` of each."""
    def codegen(context, builder, signature, args):
        sig = signature.args
        destination = _shared_address(context, builder, sig[0], args[0], args[1])
        source = _global_address(context, builder, sig[2], args[2], ir.Constant(_I64, 0))
        at = [_as_u32(context, builder, args[n], sig[n]) for n in (3, 4)]
        barrier = _shared_address(context, builder, sig[5], args[5], args[6])
        blocks = builder.trunc(_as_u32(context, builder, args[7], sig[7]), _I16)
        _asm(builder, _VOID, [destination, source, *at, barrier, blocks],
             "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
             " [$0], [$1, {$2, $3}], [$4], $5;", "r,l,r,r,r,h,~{memory}", side_effect=True)
        return context.get_dummy_value()

    return types.void(smem, index, tmap, x, y, bars, bar_index, mask), codegen


def cluster_launcher(driver_kernel, cluster: int):
    """A call ``launch(stream)`` of ``driver_kernel`` (``tcomp.codegen.launch.DriverKernel``,
    its pointers already in its slots) in clusters of ``cluster`` blocks along x, through
    ``cuLaunchKernelEx``."""
    from tcomp.codegen.driver import checked, driver

    d = driver()
    function, gx, gy, gz, bx, by, bz, shared = driver_kernel.launch_head
    attribute = d.CUlaunchAttribute()
    attribute.id = d.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    attribute.value.clusterDim.x, attribute.value.clusterDim.y, attribute.value.clusterDim.z = cluster, 1, 1
    config = d.CUlaunchConfig()
    config.gridDimX, config.gridDimY, config.gridDimZ = gx, gy, gz
    config.blockDimX, config.blockDimY, config.blockDimZ = bx, by, bz
    config.sharedMemBytes = shared
    config.attrs, config.numAttrs = [attribute], 1

    def launch(stream):
        config.hStream = d.CUstream(stream)
        checked(d.cuLaunchKernelEx(config, function, driver_kernel.params_address, 0),
                f"cuLaunchKernelEx (grid {gx}, clusters of {cluster})")

    return launch
