"""The loop-nest IR: statements, buffers, kernels and programs.

Grammar (frozen dataclasses; expressions are ``tcomp.ir.expr`` nodes)::

    Stmt    := For(var, extent, kind, body)     kind: serial | unroll | vectorize
                                                 | across_threads (until lowered)
                                                 | blockIdx.{x,y,z} | threadIdx.{x,y,z}
             | Seq(stmts)
             | Store(buffer, index, value, predicate, asynchronous, in_bounds)
                                                 flat store; predicate may be None; an
                                                 asynchronous one is a cp.async copy;
                                                 where in_bounds is given and false, a
                                                 zero is stored instead of value
             | Allocate(buffer, body)            shared or local storage live in body
             | Barrier(threads)                  __syncthreads() for every thread of a block
                                                 (threads: a named barrier of the first ones)
             | AsyncCommit()                     close the thread's group of cp.async copies
             | AsyncWait(pending)                wait until at most ``pending`` of the
                                                 thread's committed groups are in flight
             | WarpMma(intrinsic, dtype, acc, acc_index, a_values, b_values,
                         a_registers, b_registers)
                                                 one warp-wide matrix instruction (every
                                                 lane of the warp executes it)
             | FragmentLoad(count, trans, src, src_index, dst, dst_index)
                                                 ldmatrix: the warp loads 8x8 matrices of
                                                 16-bit values into fragment registers
             | RegisterPairLoad(width, src, low_index, high_index, dst, dst_index)
                                                 two vector loads of 16-bit values from
                                                 global memory, lane by lane packed into
                                                 operand registers
             | WarpgroupMma(width, dtype, acc, acc_index, a, a_start, a_strides,
                            b, b_start, b_strides, trans_b)
                                                 one wgmma.mma_async of a warpgroup (128
                                                 threads), operands in shared memory
             | WarpgroupFence(accumulators)      wgmma.fence before a chain of them
             | WarpgroupWait(pending, accumulators, commit)
                                                 commit the chain, wait until at most
                                                 ``pending`` chains are in flight
             | ProxyFence()                      fence.proxy.async: this thread's shared
                                                 stores become visible to wgmma
             | BarrierInit(barriers, count)      the block's first thread readies each
                                                 mbarrier of a shared uint64 buffer
             | BarrierWait(barriers, slot, parity)
                                                 every thread waits for that phase
             | TileCopy(barriers, slot, nbytes, boxes, predicate)
                                                 the block's first thread announces
                                                 nbytes on the barrier, then issues the
                                                 BoxCopy statements (TMA) that land them
             | BoxCopy(buffer, index, tensor_map, coords)
             | BarrierArrive(barriers, slot, predicate)
                                                 the first lane of each warp arrives
             | ProducerLoop(var, extent, body)  a warp-specialized ring's producer
             | Specialized(producer, consumers, consumer_warpgroups)
                                                 the producer warpgroup's and the
                                                 consumer warpgroups' parts of a kernel
    TensorMap := (name, tensor, box_rows, box_cols, swizzle)
                                                 a kernel parameter: how TMA copies boxes
                                                 of a global 2-D tensor
    Buffer  := (name, dtype, shape, scope, blocks, swizzle)
                                                 scope: global | shared | local; blocks:
                                                 () row-major, or (rows, cols): stored as
                                                 contiguous blocks of the last two dims;
                                                 swizzle: their 16-byte chunks permuted
    Kernel  := (name, params, body, grid, block) one launch
    Program := (kernels, inputs, outputs, intermediates)

Loops bound to ``blockIdx``/``threadIdx`` are not executed as loops: their variable
is the block or thread index, and a thread whose index is at or past the loop's
extent skips the stores under it (the predicate carries that guard), so barriers
stay reachable by every thread of the block.
"""

from __future__ import annotations

from dataclasses import dataclass

from .expr import Expr, Var

THREAD_TAGS = ("threadIdx.x", "threadIdx.y", "threadIdx.z")
BLOCK_TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z")
#: a reduction loop that the block's threads run together (``s[T].reduce_across_threads``;
#: ``tcomp.lower.thread_reduction`` writes it out)
ACROSS_THREADS = "across_threads"
LOOP_KINDS = ("serial", "unroll", "vectorize", "tensorize", ACROSS_THREADS) + BLOCK_TAGS + THREAD_TAGS


@dataclass(frozen=True, eq=False)
class Buffer:
    name: str
    dtype: str
    shape: tuple
    scope: str = "global"
    #: () for row-major storage; (rows, cols) for a buffer whose last two dimensions are
    #: stored as a row-major grid of rows x cols blocks, each block contiguous and
    #: row-major (``s[T].storage_blocks``; wgmma's 8 x 8 core matrices)
    blocks: tuple = ()
    #: with ``blocks`` of 8 rows x 128 bytes: the 16-byte chunks of each block row are
    #: permuted, chunk c of row r stored at chunk ``c ^ (r % 8)`` (the 128-byte swizzle
    #: of wgmma and TMA; ``s[T].storage_swizzle``); the buffer starts 1024-byte aligned
    swizzle: bool = False
    #: of a pipeline's ring: iterations its slots' readers may run after they start
    #: (``s[T].pipeline(stages, reader_lag)``)
    reader_lag: int = 0

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def __repr__(self) -> str:
        return f"Buffer({self.name}, {self.dtype}, {self.shape}, {self.scope})"


class Stmt:
    """Base class of statements."""

    __hash__ = object.__hash__

    def __str__(self) -> str:
        from .printer import stmt_to_str

        return stmt_to_str(self)


@dataclass(frozen=True, eq=False)
class For(Stmt):
    var: Var
    extent: int
    kind: str
    body: Stmt


@dataclass(frozen=True, eq=False)
class Seq(Stmt):
    stmts: tuple


@dataclass(frozen=True, eq=False)
class Store(Stmt):
    buffer: Buffer
    index: Expr
    value: Expr
    predicate: Expr | None = None
    #: a copy by cp.async: ``value`` is a Load of a global buffer of the same element
    #: size, ``buffer`` is shared; the element lands by an AsyncWait that leaves fewer
    #: groups in flight than this thread committed after the copy
    asynchronous: bool = False
    #: where given and false, zero is stored instead of ``value`` (which is then not
    #: evaluated): the padding of a tile past its tensor's edge (``tcomp.lower.padding``);
    #: an asynchronous copy then copies no bytes and zero-fills its destination
    in_bounds: Expr | None = None


@dataclass(frozen=True, eq=False)
class Allocate(Stmt):
    buffer: Buffer
    body: Stmt


@dataclass(frozen=True, eq=False)
class Barrier(Stmt):
    """``__syncthreads()``; with ``threads``, a named barrier (``bar.sync 1, threads``) that
    only the first ``threads`` threads of the block meet at: the consumer warpgroups of a
    warp-specialized kernel (:class:`Specialized`), whose producer never reaches it."""

    threads: int | None = None


@dataclass(frozen=True, eq=False)
class AsyncCommit(Stmt):
    pass


@dataclass(frozen=True, eq=False)
class AsyncWait(Stmt):
    pending: int


@dataclass(frozen=True, eq=False)
class WarpMma(Stmt):
    """``mma.sync.m16n8k16`` (``s[T].tensorize``): the 32 lanes of a warp multiply a 16x16
    A by a 16x8 B of 16-bit floats (``dtype``) and add a 16x8 float32 accumulator. This
    lane's share, in the instruction's fragment layouts (``tcomp.codegen.warp_mma``):
    ``acc[acc_index[r]]`` holds accumulator register r (4 of them); ``a_values[2 * r + h]``
    is half h of A's register r (8 values), ``b_values[2 * r + h]`` half h of B's
    register r (4 values); each value a float32 expression exact in ``dtype``.

    Where a :class:`FragmentLoad` has loaded them already, ``a_registers`` (4) and
    ``b_registers`` (2) are this lane's operand registers as loads of an int32 local
    buffer (two 16-bit bit patterns each, the lower-numbered value in the low half), and
    the values only say what those registers hold; empty, the operands are read from
    the values."""

    intrinsic: str
    dtype: str
    acc: Buffer
    acc_index: tuple
    a_values: tuple
    b_values: tuple
    a_registers: tuple = ()
    b_registers: tuple = ()


@dataclass(frozen=True, eq=False)
class FragmentLoad(Stmt):
    """``ldmatrix.sync.aligned.m8n8.x{count}[.trans].shared.b16``: the 32 lanes of a warp
    load ``count`` 8x8 matrices of 16-bit values from the shared buffer ``src`` (stored as
    bit patterns). This lane gives the address of row ``lane % 8`` of matrix
    ``lane // 8`` (element ``src_index``; the row's 8 elements are contiguous and 16-byte
    aligned) and receives register m of matrix m into ``dst[dst_index[m]]`` (an int32
    local buffer): row ``lane // 4``, elements ``2 (lane % 4)`` and ``2 (lane % 4) + 1``,
    or with ``trans`` column ``lane // 4``, rows ``2 (lane % 4)`` and ``2 (lane % 4) + 1``."""

    count: int
    trans: bool
    src: Buffer
    src_index: Expr
    dst: Buffer
    dst_index: tuple


@dataclass(frozen=True, eq=False)
class RegisterPairLoad(Stmt):
    """Operand registers of warp matrix instructions straight from global memory: the
    ``width`` consecutive 16-bit values of ``src`` (stored as bit patterns) from element
    ``low_index`` and as many from ``high_index``, each run one aligned vector load of
    ``2 * width`` bytes; lane ``c`` of the two is packed into the 32-bit register
    ``dst[dst_index[c]]`` of an int32 local buffer (the low run's value in the low half).
    A warp tile whose n8 tiles a lane's columns run across (tile ``c`` holding column
    ``c`` of the lane's ``width``) gets the registers of ``width`` B fragments this way
    from two rows of W stored k-major, no shared memory between."""

    width: int
    src: Buffer
    low_index: Expr
    high_index: Expr
    dst: Buffer
    dst_index: tuple


@dataclass(frozen=True, eq=False)
class WarpgroupMma(Stmt):
    """``wgmma.mma_async.m64n{width}k16`` (``s[T].tensorize``): the 128 threads of a
    warpgroup multiply a 64 x 16 A by a 16 x ``width`` B of 16-bit floats (``dtype``), both
    in shared buffers stored in 8 x 8 blocks, and add the product to a 64 x ``width``
    float32 accumulator, ``width / 2`` registers a thread: ``acc[acc_index[i]]`` is this
    thread's register i (``tcomp.codegen.warpgroup_mma`` gives the layout). The operands
    begin at elements ``a_start`` and ``b_start`` (the same for every thread of the
    warpgroup); ``*_strides`` are the descriptors' (leading, stride) byte offsets; with
    ``trans_b`` B's n is contiguous (a row-major K x N tile). The instruction runs
    asynchronously: a :class:`WarpgroupFence` precedes a chain of them and a
    :class:`WarpgroupWait` retires it before anything else reads the accumulators or
    overwrites the operands."""

    width: int
    dtype: str
    acc: Buffer
    acc_index: tuple
    a: Buffer
    a_start: Expr
    a_strides: tuple
    b: Buffer
    b_start: Expr
    b_strides: tuple
    trans_b: bool
    #: the descriptors' layout modes of A and B: 0 8 x 8 blocks, 1 the 128-byte swizzle
    modes: tuple = (0, 0)


@dataclass(frozen=True, eq=False)
class WarpgroupFence(Stmt):
    """``wgmma.fence``: this thread's earlier accesses of ``accumulators`` (local buffers)
    are ordered before the wgmma chain that follows."""

    accumulators: tuple


@dataclass(frozen=True, eq=False)
class WarpgroupWait(Stmt):
    """``wgmma.commit_group`` then ``wgmma.wait_group pending``: the chain issued since the
    last commit closes, and the thread waits until at most ``pending`` chains run; with 0
    every wgmma before it has written ``accumulators`` and read its shared operands.
    ``commit=False`` waits without closing a group: the drain after a loop whose chains
    each closed their own (an empty group there makes ptxas serialize the wgmma of a
    warp-specialized kernel)."""

    pending: int
    accumulators: tuple
    commit: bool = True


@dataclass(frozen=True, eq=False)
class ProxyFence(Stmt):
    """``fence.proxy.async.shared::cta``: this thread's shared-memory stores (and landed
    cp.async copies) become visible to the async proxy that wgmma reads through."""


@dataclass(frozen=True, eq=False)
class TensorMap:
    """A TMA tensor map, passed to a kernel after its buffers: copies of ``box_rows`` x
    ``box_cols`` boxes of the row-major 2-D global buffer ``tensor``, landing in
    ``swizzle`` (128: the 128-byte swizzle, 0: row-major). The host makes it from the
    tensor's address at each call (``tcomp.codegen.tensor_maps``)."""

    name: str
    tensor: Buffer
    box_rows: int
    box_cols: int
    swizzle: int = 128


@dataclass(frozen=True, eq=False)
class BarrierInit(Stmt):
    """The block's first thread makes every word of ``barriers`` (a shared uint64 buffer)
    an mbarrier expecting ``count`` arrivals a phase, and fences the inits; a block
    barrier must follow before any thread uses them. ``count`` 0: one arrival per consumer
    warp of a warp-specialized kernel, which ``tcomp.lower.warp_roles`` fills in once the
    block's size is known."""

    barriers: Buffer
    count: int = 1


@dataclass(frozen=True, eq=False)
class BarrierWait(Stmt):
    """Every thread waits until the phase of parity ``parity`` (0 or 1) of
    ``barriers[slot]`` has completed: a ring slot in its n-th use completes the phase of
    parity ``n % 2``."""

    barriers: Buffer
    slot: Expr
    parity: Expr


@dataclass(frozen=True, eq=False)
class BoxCopy(Stmt):
    """One TMA copy (``cp.async.bulk.tensor.2d``) of the box of ``tensor_map`` whose first
    element is at ``coords`` (column, row) of its tensor, into the shared ``buffer`` from
    element ``index`` on (1024-byte aligned with the swizzle); elements past the tensor's
    edge land as zeros. Only inside a :class:`TileCopy`, which says what it completes on."""

    buffer: Buffer
    index: Expr
    tensor_map: TensorMap
    coords: tuple


@dataclass(frozen=True, eq=False)
class TileCopy(Stmt):
    """Where ``predicate`` holds (None: always), the block's first thread announces
    ``nbytes`` on ``barriers[slot]`` (one arrival) and issues ``boxes``, whose bytes
    complete that phase; the other threads skip it."""

    barriers: Buffer
    slot: Expr
    nbytes: int
    boxes: tuple
    predicate: Expr | None = None


@dataclass(frozen=True, eq=False)
class BarrierArrive(Stmt):
    """Where ``predicate`` holds (None: always), the first lane of each warp arrives on
    ``barriers[slot]`` (a consumer warp releasing a ring slot it is done reading)."""

    barriers: Buffer
    slot: Expr
    predicate: Expr | None = None


@dataclass(frozen=True, eq=False)
class ProducerLoop(Stmt):
    """The producer's loop over a warp-specialized ring's tiles (``var`` from 0 to
    ``extent - 1``; its body waits for a slot to be released, then fills it), placed where
    the ring's prologue would be; ``tcomp.lower.warp_roles`` moves it into the producer
    warpgroup's part of the kernel."""

    var: Var
    extent: int
    body: Stmt


@dataclass(frozen=True, eq=False)
class Specialized(Stmt):
    """A warp-specialized kernel's two parts: the block's last warpgroup (threadIdx.y ==
    ``consumer_warpgroups``) is the producer, whose first thread runs ``producer``; the
    warpgroups before it run ``consumers``."""

    producer: Stmt
    consumers: Stmt
    consumer_warpgroups: int


@dataclass(frozen=True, eq=False)
class Kernel(Stmt):
    name: str
    params: tuple  # Buffers in global memory, in argument order
    body: Stmt
    grid: tuple = (1, 1, 1)
    block: tuple = (1, 1, 1)
    #: ((shared buffer, (the buffers it may take the bytes of, all dead before its first
    #: use), ...)): ``tcomp.lower.shared_reuse``; the layout of ``tcomp.target.storage``
    shared_reuse: tuple = ()
    #: TensorMaps the kernel takes after ``params`` (``tcomp.lower.tensor_copies``)
    tensor_maps: tuple = ()


@dataclass(frozen=True, eq=False)
class Program:
    """What ``tc.lower`` returns: kernels launched in order over global buffers."""

    kernels: tuple
    inputs: tuple  # Buffers, in placeholder order
    outputs: tuple
    intermediates: tuple  # global buffers the host module allocates

    def __str__(self) -> str:
        from .printer import program_to_str

        return program_to_str(self)


def seq(*stmts) -> Stmt:
    """A statement sequence, flattening nested sequences and dropping Nones."""
    flat = []
    for s in stmts:
        if s is None:
            continue
        if isinstance(s, Seq):
            flat.extend(s.stmts)
        else:
            flat.append(s)
    if len(flat) == 1:
        return flat[0]
    return Seq(tuple(flat))
