"""Workloads and schedules for the legality tests.

Each ``illegal_*`` / ``legal_*`` function builds a fresh algorithm and schedule and
returns a :class:`Case`. An illegal case records the line of the schedule call that
the checker must blame (``line``, taken on the very line of that call), the texts its
error message must contain, and what ``tc.build(s, check=False)`` then does:

- ``"differs"``: runs and gives a result other than ``tc.evaluate``;
- ``"race"``: a data race; the result differs in at least one of a few runs with the
  simulator's threads interleaving finely;
- ``"hidden"``: runs and matches, because every wrong instance is recomputed later from
  the final value (an epilogue placed inside a reduction loop); the message says so;
- ``"refused"``: lowering refuses it too (a ``tc.ScheduleError``).
"""

from __future__ import annotations

import inspect
import os
from dataclasses import dataclass, field

import numpy as np

import tcomp as tc
from tcomp.testing import algorithms

FILE = os.path.basename(__file__)


def here() -> int:
    """The line number of the caller (put it on the line of the call it refers to)."""
    return inspect.currentframe().f_back.f_lineno


@dataclass
class Case:
    s: object
    out: object
    inputs: list  # placeholders, in argument order
    line: int = 0  # line of the blamed schedule call (illegal cases)
    expect: tuple = ()  # texts the error message must contain
    outcome: str = "legal"  # legal | differs | race | hidden | refused
    reassociates: bool = False
    exact: bool = False  # the result must equal tc.evaluate bit for bit
    extra: dict = field(default_factory=dict)

    @property
    def site(self) -> str:
        return f"{FILE}:{self.line}"


# ---------------------------------------------------------------------- workloads

ACTS = {
    "silu": tc.silu,
    "relu": lambda x: tc.maximum(x, 0.0),
    "sigmoid": tc.sigmoid,
}


def matmul_act(act="silu", M=6, N=10, K=12):
    """C = A @ W; Y = act(C)."""
    A = tc.placeholder((M, K), "float32", name="A")
    W = tc.placeholder((K, N), "float32", name="W")
    k = tc.reduce_axis(K, name="k")
    C = tc.compute((M, N), lambda i, j: tc.sum(A[i, k] * W[k, j], axis=k), name="C")
    Y = tc.compute((M, N), lambda i, j: ACTS[act](C[i, j]), name="Y")
    return A, W, C, Y


def matmul(M=6, N=10, K=12):
    A = tc.placeholder((M, K), "float32", name="A")
    W = tc.placeholder((K, N), "float32", name="W")
    k = tc.reduce_axis(K, name="k")
    C = tc.compute((M, N), lambda i, j: tc.sum(A[i, k] * W[k, j], axis=k), name="C")
    return A, W, C


def swiglu(M=6, N=8, K=12):
    """G = A @ Wg; U = A @ Wu; H = silu(G) * U."""
    A = tc.placeholder((M, K), "float32", name="A")
    Wg = tc.placeholder((K, N), "float32", name="Wg")
    Wu = tc.placeholder((K, N), "float32", name="Wu")
    k = tc.reduce_axis(K, name="k")
    G = tc.compute((M, N), lambda i, j: tc.sum(A[i, k] * Wg[k, j], axis=k), name="G")
    k2 = tc.reduce_axis(K, name="k")
    U = tc.compute((M, N), lambda i, j: tc.sum(A[i, k2] * Wu[k2, j], axis=k2), name="U")
    H = tc.compute((M, N), lambda i, j: tc.silu(G[i, j]) * U[i, j], name="H")
    return A, Wg, Wu, G, U, H


def rowmax_quant(M=4, N=16):
    """R[i] = max_k |X[i, k]|; Q = quantize(X, R[i] / 127, int8)."""
    X = tc.placeholder((M, N), "float32", name="X")
    k = tc.reduce_axis(N, name="k")
    R = tc.compute((M,), lambda i: tc.max(tc.abs(X[i, k]), axis=k), name="R")
    Q = tc.compute((M, N), lambda i, j: tc.quantize(X[i, j], R[i] / 127.0, "int8"), name="Q")
    return X, R, Q


def softmax(M=4, N=12):
    """Row softmax: Mx = max; E = exp(X - Mx); S = sum E; P = E / S."""
    X = tc.placeholder((M, N), "float32", name="X")
    k = tc.reduce_axis(N, name="k")
    Mx = tc.compute((M,), lambda i: tc.max(X[i, k], axis=k), name="Mx")
    E = tc.compute((M, N), lambda i, j: tc.exp(X[i, j] - Mx[i]), name="E")
    k2 = tc.reduce_axis(N, name="k")
    S = tc.compute((M,), lambda i: tc.sum(E[i, k2], axis=k2), name="S")
    P = tc.compute((M, N), lambda i, j: E[i, j] / S[i], name="P")
    return X, Mx, E, S, P


def chain(M=6, N=8):
    """B = X * 2 + 1; S = silu(B); O = S * B - 1 (O reads both)."""
    X = tc.placeholder((M, N), "float32", name="X")
    B = tc.compute((M, N), lambda i, j: X[i, j] * 2.0 + 1.0, name="B")
    S = tc.compute((M, N), lambda i, j: tc.silu(B[i, j]), name="S")
    O = tc.compute((M, N), lambda i, j: S[i, j] * B[i, j] - 1.0, name="O")
    return X, B, S, O


def ffn_bf16(M=8, N=8, K=16, scale=0.02):
    """The bf16 FFN pipeline: C = A @ W in float32 from bf16, Cb = bf16(C), Y = silu(Cb),
    Q = quantize(Y, scale, int8)."""
    return algorithms.ffn_bf16(M, N, K, scale)


# ---------------------------------------------------------------------- illegal: hidden by recomputation


def illegal_silu_in_k():
    A, W, C, Y = matmul_act("silu")
    s = tc.create_schedule(Y)
    (k,) = s[C].reduce_axis
    s[Y].reverse_compute_at(s[C], k); line = here()  # noqa: E702
    return Case(s, Y, [A, W], line, ("Y[0, 0] at k=0 reads C[0, 0], which C still updates at k=1..11",
                                     "C_update[i, j, k = 11] -> Y[", "reverse_compute_at(s['C'], j)",
                                     "wasted-work factor 12x"), "hidden")


def illegal_relu_in_ko():
    A, W, C, Y = matmul_act("relu")
    s = tc.create_schedule(Y)
    (k,) = s[C].reduce_axis
    ko, ki = s[C].split(k, 4)
    s[Y].reverse_compute_at(s[C], ko); line = here()  # noqa: E702
    return Case(s, Y, [A, W], line, ("Y[0, 0] at k_o=0 reads C[0, 0], which C still updates at "
                                     "k_o=1..2 (its k=4..11)", "wasted-work factor 3x"), "hidden")


def illegal_sigmoid_in_ki():
    A, W, C, Y = matmul_act("sigmoid")
    s = tc.create_schedule(Y)
    (k,) = s[C].reduce_axis
    ko, ki = s[C].split(k, 4)
    s[Y].reverse_compute_at(s[C], ki); line = here()  # noqa: E702
    return Case(s, Y, [A, W], line, ("Y[0, 0] at k_o=0, k_i=0 reads C[0, 0], which C still updates",
                                     "(its k=1..11)", "wasted-work factor 12x"), "hidden")


def illegal_silu_in_k_outermost():
    """k moved outside the spatial loops; the epilogue at C's i runs at every k."""
    A, W, C, Y = matmul_act("silu")
    s = tc.create_schedule(Y)
    i, j = s[C].axis
    (k,) = s[C].reduce_axis
    s[C].reorder(k, i, j)
    s[Y].reverse_compute_at(s[C], i); line = here()  # noqa: E702
    return Case(s, Y, [A, W], line, ("Y[0, 0] at k=0 reads C[0, 0], which C still updates at k=1..11",
                                     "reverse_compute_at(s['C'], i)"), "hidden")


def illegal_relu_in_k_tiled_blocks():
    A, W, C, Y = matmul_act("relu", 8, 8, 8)
    s = tc.create_schedule(Y)
    i, j = s[C].axis
    (k,) = s[C].reduce_axis
    io, jo, ii, ji = s[C].tile(i, j, 4, 4)
    ko, ki = s[C].split(k, 4)
    s[C].reorder(io, jo, ko, ii, ji, ki)
    s[C].bind(io, "blockIdx.y")
    s[C].bind(jo, "blockIdx.x")
    s[Y].reverse_compute_at(s[C], ko); line = here()  # noqa: E702
    return Case(s, Y, [A, W], line, ("Y[0, 0] at k_o=0 reads C[0, 0], which C still updates at k_o=1",
                                     "wasted-work factor 2x"), "hidden")


def illegal_quant_in_rowmax_loop():
    X, R, Q = rowmax_quant()
    s = tc.create_schedule(Q)
    (k,) = s[R].reduce_axis
    s[Q].reverse_compute_at(s[R], k); line = here()  # noqa: E702
    return Case(s, Q, [X], line, ("Q[0, 0] at k=0 reads R[0], which R still updates at k=1..15",
                                  "never a partial max", "reverse_compute_at(s['R'], i)"), "hidden")


def illegal_quant_in_rowmax_ko():
    X, R, Q = rowmax_quant()
    s = tc.create_schedule(Q)
    (k,) = s[R].reduce_axis
    ko, ki = s[R].split(k, 8)
    s[Q].reverse_compute_at(s[R], ko); line = here()  # noqa: E702
    return Case(s, Q, [X], line, ("Q[0, 0] at k_o=0 reads R[0], which R still updates at k_o=1 (its k=8..15)",),
                "hidden")


def illegal_softmax_divide_in_sum_loop():
    X, Mx, E, S, P = softmax()
    s = tc.create_schedule(P)
    (k,) = s[S].reduce_axis
    s[P].reverse_compute_at(s[S], k); line = here()  # noqa: E702
    return Case(s, P, [X], line, ("P[0, 0] at k=0 reads S[0], which S still updates at k=1..11",
                                  "never a partial sum"), "hidden")


def illegal_softmax_exp_in_max_loop():
    X, Mx, E, S, P = softmax()
    s = tc.create_schedule(P)
    (k,) = s[Mx].reduce_axis
    s[E].reverse_compute_at(s[Mx], k); line = here()  # noqa: E702
    return Case(s, P, [X], line, ("E[0, 0] at k=0 reads Mx[0], which Mx still updates at k=1..11",),
                "hidden")


def illegal_bf16_epilogue_in_k():
    A, W, C, Cb, Y, Q = ffn_bf16()
    s = tc.create_schedule(Q)
    s[Cb].compute_inline()
    s[Y].compute_inline()
    (k,) = s[C].reduce_axis
    s[Q].reverse_compute_at(s[C], k); line = here()  # noqa: E702
    return Case(s, Q, [A, W], line, ("Q[0, 0] at k=0 reads C[0, 0], which C still updates at k=1..15",),
                "hidden")


def illegal_swiglu_in_gate_k():
    A, Wg, Wu, G, U, H = swiglu()
    s = tc.create_schedule(H)
    (k,) = s[G].reduce_axis
    s[H].reverse_compute_at(s[G], k); line = here()  # noqa: E702
    s[U].compute_at(s[H], s[H].axis[1])
    return Case(s, H, [A, Wg, Wu], line, ("H[0, 0] at k=0 reads G[0, 0], which G still updates at k=1..11",),
                "hidden")


# ---------------------------------------------------------------------- illegal: wrong results


def illegal_matmul_k_on_threads():
    A, W, C = matmul(3, 3, 9)
    s = tc.create_schedule(C)
    i, j = s[C].axis
    (k,) = s[C].reduce_axis
    s[C].reorder(k, i, j)
    s[C].bind(k, "threadIdx.x"); line = here()  # noqa: E702
    return Case(s, C, [A, W], line, ("C[0, 0] (update k=0) at i=0, j=0 in threadIdx.x=0 updates",
                                     "C[0, 0] (update k=1) at i=0, j=0 in threadIdx.x=1 updates",
                                     "from different threads", "s['C'].bind(i, 'threadIdx.x')",
                                     "leave k unbound"), "race")


def illegal_matmul_k_on_blocks():
    A, W, C = matmul(3, 3, 5)
    s = tc.create_schedule(C)
    i, j = s[C].axis
    (k,) = s[C].reduce_axis
    s[C].reorder(k, i, j)
    s[C].bind(k, "blockIdx.x"); line = here()  # noqa: E702
    return Case(s, C, [A, W], line, ("in blockIdx.x=0 updates", "in blockIdx.x=1 updates",
                                     "from different blocks", "blocks of one kernel never wait"), "differs")


def illegal_matmul_ki_on_threads():
    A, W, C = matmul(4, 4, 16)
    s = tc.create_schedule(C)
    i, j = s[C].axis
    (k,) = s[C].reduce_axis
    ko, ki = s[C].split(k, 4)
    s[C].bind(ki, "threadIdx.x"); line = here()  # noqa: E702
    return Case(s, C, [A, W], line, ("C[0, 0] (update k=0) at i=0, j=0, k_o=0 in threadIdx.x=0 updates",
                                     "(update k=1) at i=0, j=0, k_o=0 in threadIdx.x=1 updates"), "race")


def illegal_matmul_ko_on_blocks():
    A, W, C = matmul(4, 4, 16)
    s = tc.create_schedule(C)
    i, j = s[C].axis
    (k,) = s[C].reduce_axis
    ko, ki = s[C].split(k, 4)
    s[C].reorder(ko, i, j, ki)
    s[C].bind(ko, "blockIdx.x"); line = here()  # noqa: E702
    return Case(s, C, [A, W], line, ("from different blocks", "s['C'].bind(i, 'blockIdx.x')"), "differs")


def illegal_silu_matmul_k_on_threads():
    A, W, C, Y = matmul_act("silu", 4, 4, 8)
    s = tc.create_schedule(Y)
    i, j = s[C].axis
    (k,) = s[C].reduce_axis
    s[C].reorder(i, k, j)
    s[C].bind(k, "threadIdx.x"); line = here()  # noqa: E702
    s[Y].reverse_compute_at(s[C], i)
    return Case(s, Y, [A, W], line, ("a data race on C", "from different threads"), "race")


def illegal_rowmax_k_on_threads():
    """The row max's loop bound to threads, R in registers: every thread keeps the max of
    its own element only, and quantizes with it."""
    X, R, Q = rowmax_quant(3, 16)
    s = tc.create_schedule(Q)
    i, j = s[Q].axis
    s[Q].bind(i, "blockIdx.x")
    s[Q].bind(j, "threadIdx.x")
    s[R].compute_at(s[Q], i)
    (k,) = s[R].reduce_axis
    s[R].bind(k, "threadIdx.x"); line = here()  # noqa: E702
    return Case(s, Q, [X], line, ("Q[0, 0] reads R[0], but the last write of it there (in local memory, "
                                  "the copy of blockIdx.x=0, threadIdx.x=0) is R's update k=0, not its last "
                                  "update k=15", "leave k unbound"), "differs")


def illegal_rowmax_local_ki_on_threads():
    """Each thread keeps its own (local) partial max: quantization uses a partial max."""
    X, R, Q = rowmax_quant(3, 16)
    s = tc.create_schedule(Q)
    i, j = s[Q].axis
    s[Q].bind(i, "blockIdx.x")
    s[Q].bind(j, "threadIdx.x")
    s[R].compute_at(s[Q], i)
    (k,) = s[R].reduce_axis
    ko, ki = s[R].split(k, 4)
    s[R].bind(ki, "threadIdx.x"); line = here()  # noqa: E702
    return Case(s, Q, [X], line, ("Q[0, 0] reads R[0], but the last write of it there (in local memory, "
                                  "the copy of blockIdx.x=0, threadIdx.x=0) is R's update k=12, not its last "
                                  "update k=15",), "differs")


def illegal_softmax_sum_shared_k_on_threads():
    X, Mx, E, S, P = softmax(2, 32)
    s = tc.create_schedule(P)
    i, j = s[P].axis
    s[P].bind(i, "blockIdx.x")
    s[P].bind(j, "threadIdx.x")
    s[E].compute_inline()
    s[Mx].compute_at(s[P], i)
    s[S].compute_at(s[P], i)
    s[S].set_scope("shared")
    (k,) = s[S].reduce_axis
    s[S].bind(k, "threadIdx.x"); line = here()  # noqa: E702
    return Case(s, P, [X], line, ("a data race on S", "S[0] (update k=0)"), "race")


def illegal_softmax_sum_k_on_blocks():
    X, Mx, E, S, P = softmax(3, 6)
    s = tc.create_schedule(P)
    i = s[S].axis[0]
    (k,) = s[S].reduce_axis
    s[S].reorder(k, i)
    s[S].bind(k, "blockIdx.x"); line = here()  # noqa: E702
    return Case(s, P, [X], line, ("from different blocks", "S[0] (update k=0) at i=0 in blockIdx.x=0"),
                "differs")


def illegal_swiglu_kernel_order():
    """H fused behind G's rows, in G's kernel, which runs before U's kernel."""
    A, Wg, Wu, G, U, H = swiglu()
    s = tc.create_schedule(H)
    s[H].reverse_compute_at(s[G], s[G].axis[0]); line = here()  # noqa: E702
    return Case(s, H, [A, Wg, Wu], line, ("H[0, 0] reads U[0, 0], which U computes only later, in kernel k_U "
                                          "(launched after k_G)", "H reads U before U has finished"),
                "differs")


def illegal_swiglu_gate_k_on_threads():
    A, Wg, Wu, G, U, H = swiglu(4, 4, 8)
    s = tc.create_schedule(H)
    i, j = s[G].axis
    (k,) = s[G].reduce_axis
    s[G].reorder(k, i, j)
    s[G].bind(k, "threadIdx.x"); line = here()  # noqa: E702
    return Case(s, H, [A, Wg, Wu], line, ("a data race on G", "G[0, 0] (update k=0)"), "race")


def illegal_chain_kernel_order():
    X, B, S, O = chain()
    s = tc.create_schedule(O)
    s[O].reverse_compute_at(s[B], s[B].axis[0]); line = here()  # noqa: E702
    return Case(s, O, [X], line, ("O[0, 0] reads S[0, 0], which S computes only later, in kernel k_S",
                                  "s['O'].compute_root()"), "differs")


def legal_shared_refilled_in_a_one_iteration_loop():
    """A shared cache of A, refilled at each k_o, attached at a one-iteration loop inside
    it: lowering puts a barrier at the end of that loop too, since k_o runs it again (the
    fill of the next k_o must wait for every thread to finish reading)."""
    A, W, C = matmul(2, 8, 16)
    s = tc.create_schedule(C)
    AS = s.cache_read(A, "shared", [C])
    i, j = s[C].axis
    (k,) = s[C].reduce_axis
    ko, ki = s[C].split(k, 4)
    kio, kii = s[C].split(ki, 4)
    s[C].reorder(i, j, ko, kio, kii)
    s[C].bind(i, "blockIdx.x")
    s[C].bind(j, "threadIdx.x")
    s[AS].compute_at(s[C], kio)
    s[AS].bind(s[AS].axis[1], "threadIdx.x")
    return Case(s, C, [A, W])


def illegal_local_cache_filled_by_threads():
    """A local (per-thread) copy filled cooperatively: each thread writes one element of its
    own copy and reads the others', which no one wrote."""
    X = tc.placeholder((4, 8), "float32", name="X")
    P = tc.compute((4, 8), lambda i, j: X[i, j] * 2.0, name="P")
    O = tc.compute((4, 8), lambda i, j: P[i, 7 - j] + 1.0, name="O")
    s = tc.create_schedule(O)
    i, j = s[O].axis
    s[O].bind(j, "threadIdx.x")
    s[P].compute_at(s[O], i)
    s[P].bind(s[P].axis[1], "threadIdx.x"); line = here()  # noqa: E702
    return Case(s, O, [X], line, ("O[0, 0] reads P[0, 7], but no instance of P writes that value where O reads "
                                  "it (local memory, the copy of threadIdx.x=0)",
                                  "s['P'].set_scope('shared')"), "differs")


# ---------------------------------------------------------------------- illegal: refused by lowering too


def illegal_producer_not_enclosing_all_readers():
    X, B, S, O = chain()
    s = tc.create_schedule(O)
    s[B].compute_at(s[S], s[S].axis[0]); line = here()  # noqa: E702
    return Case(s, O, [X], line, ("O[0, 0] reads B[0, 0], but B is only computed inside loop i of S",
                                  "O is computed in its own kernel k_O", "s['B'].compute_root()"),
                "refused")


def illegal_producer_inside_a_deeper_loop():
    X = tc.placeholder((5, 7), "float32", name="X")
    P = tc.compute((5, 7), lambda i, j: X[i, j] * 2.0, name="P")
    U = tc.compute((5, 7), lambda i, j: P[i, j] + 1.0, name="U")
    V = tc.compute((5, 7), lambda i, j: P[i, j] * U[i, j], name="V")
    s = tc.create_schedule(V)
    i, j = s[V].axis
    s[U].compute_at(s[V], i)
    s[P].compute_at(s[V], j); line = here()  # noqa: E702
    return Case(s, V, [X], line, ("U[0, 0] reads P[0, 0], but P is only computed inside loop j of V",
                                  "U is computed at V.i, outside that loop", "s['P'].compute_at(s['V'], i)"),
                "refused")


def illegal_cache_outside_its_reader():
    A, W, C, Y = matmul_act("silu")
    s = tc.create_schedule(Y)
    AS = s.cache_read(A, "shared", [C])
    s[AS].compute_at(s[Y], s[Y].axis[0]); line = here()  # noqa: E702
    return Case(s, Y, [A, W], line, ("C[0, 0] reads A_shared[0, 0], but A_shared is only computed inside "
                                     "loop i of Y", "s['A_shared'].compute_at(s['C'], i)"), "refused")


ILLEGAL = [f for name, f in sorted(globals().items()) if name.startswith("illegal_")]


# ---------------------------------------------------------------------- legal


def legal_epilogue_after_reduction(act, level):
    A, W, C, Y = matmul_act(act)
    s = tc.create_schedule(Y)
    (k,) = s[C].reduce_axis
    s[C].split(k, 4)
    s[Y].reverse_compute_at(s[C], s[C].axis[{"i": 0, "j": 1}[level]])
    return Case(s, Y, [A, W])


def legal_matmul_at_every_level(level):
    """C computed at each loop of its tiled consumer."""
    A, W, C, Y = matmul_act("silu", 6, 10, 8)
    s = tc.create_schedule(Y)
    i, j = s[Y].axis
    loops = dict(zip(("io", "jo", "ii", "ji"), s[Y].tile(i, j, 4, 4)))
    s[C].compute_at(s[Y], loops[level])
    return Case(s, Y, [A, W])


def legal_rowmax_at(level):
    X, R, Q = rowmax_quant()
    s = tc.create_schedule(Q)
    i, j = s[Q].axis
    s[R].compute_at(s[Q], {"i": i, "j": j}[level])
    return Case(s, Q, [X])


def legal_quant_after_rowmax():
    X, R, Q = rowmax_quant()
    s = tc.create_schedule(Q)
    (k,) = s[R].reduce_axis
    s[R].split(k, 4)
    s[Q].reverse_compute_at(s[R], s[R].axis[0])
    return Case(s, Q, [X])


def legal_rowmax_shared_per_block():
    X, R, Q = rowmax_quant(3, 16)
    s = tc.create_schedule(Q)
    i, j = s[Q].axis
    s[Q].bind(i, "blockIdx.x")
    s[Q].bind(j, "threadIdx.x")
    s[R].compute_at(s[Q], i)
    s[R].set_scope("shared")
    return Case(s, Q, [X])


def legal_softmax_fused_rows():
    X, Mx, E, S, P = softmax()
    s = tc.create_schedule(P)
    i, j = s[P].axis
    s[E].compute_inline()
    s[Mx].compute_at(s[P], i)
    s[S].compute_at(s[P], i)
    return Case(s, P, [X])


def legal_softmax_shared_rows_threads():
    X, Mx, E, S, P = softmax(3, 12)
    s = tc.create_schedule(P)
    i, j = s[P].axis
    s[P].bind(i, "blockIdx.x")
    s[P].bind(j, "threadIdx.x")
    s[E].compute_at(s[P], i)
    s[Mx].compute_at(s[P], i)
    s[S].compute_at(s[P], i)
    for st in (E, Mx, S):
        s[st].set_scope("shared")
    s[E].bind(s[E].axis[1], "threadIdx.x")
    return Case(s, P, [X])


def legal_softmax_epilogue_after_sum():
    X, Mx, E, S, P = softmax()
    s = tc.create_schedule(P)
    s[P].reverse_compute_at(s[S], s[S].axis[0])
    s[E].reverse_compute_at(s[Mx], s[Mx].axis[0])
    return Case(s, P, [X])


def legal_swiglu_fused_at(level):
    A, Wg, Wu, G, U, H = swiglu()
    s = tc.create_schedule(H)
    axis = s[H].axis[{"i": 0, "j": 1}[level]]
    s[G].compute_at(s[H], axis)
    s[U].compute_at(s[H], axis)
    return Case(s, H, [A, Wg, Wu])


def legal_swiglu_epilogue_behind_gate():
    A, Wg, Wu, G, U, H = swiglu()
    s = tc.create_schedule(H)
    s[H].reverse_compute_at(s[G], s[G].axis[0])
    s[U].compute_at(s[H], s[H].axis[0])
    return Case(s, H, [A, Wg, Wu])


def legal_chain(variant):
    X, B, S, O = chain()
    s = tc.create_schedule(O)
    i, j = s[O].axis
    if variant == "inline":
        s[S].compute_inline()
        s[B].compute_inline()
    elif variant == "at_i":
        s[B].compute_at(s[O], i)
        s[S].compute_at(s[O], i)
    elif variant == "at_j":
        s[S].compute_at(s[O], j)
        s[B].compute_at(s[O], j)
    elif variant == "reverse":
        bi, bj = s[B].axis
        s[S].reverse_compute_at(s[B], bj)
        s[O].reverse_compute_at(s[B], bi)
    return Case(s, O, [X])


def legal_blocktile_matmul():
    """The SGEMM ladder's 2D blocktiling (shared and register caches, barriers) on 16x16x8."""
    A, W, C = matmul(16, 16, 8)
    s = tc.create_schedule(C)
    CL = s.cache_write(C, "local")
    AS = s.cache_read(A, "shared", [CL])
    WS = s.cache_read(W, "shared", [CL])
    AL = s.cache_read(AS, "local", [CL])
    WL = s.cache_read(WS, "local", [CL])
    i, j = s[C].axis
    bi, bj, ii, jj = s[C].tile(i, j, 8, 8)
    ty, ri = s[C].split(ii, 2)
    tx, rj = s[C].split(jj, 2)
    s[C].reorder(bi, bj, ty, tx, ri, rj)
    for v, tag in ((bi, "blockIdx.y"), (bj, "blockIdx.x"), (ty, "threadIdx.y"), (tx, "threadIdx.x")):
        s[C].bind(v, tag)
    s[CL].compute_at(s[C], tx)
    ci, cj = s[CL].axis
    (k,) = s[CL].reduce_axis
    ko, ki = s[CL].split(k, 4)
    s[CL].reorder(ko, ki, ci, cj)
    s[AS].compute_at(s[CL], ko)
    s[WS].compute_at(s[CL], ko)
    s[AL].compute_at(s[CL], ki)
    s[WL].compute_at(s[CL], ki)
    for cache in (AS, WS):
        a, b = s[cache].axis
        rest, tid = s[cache].split(s[cache].fuse(a, b), 16)
        y, x = s[cache].split(tid, 4)
        s[cache].bind(y, "threadIdx.y")
        s[cache].bind(x, "threadIdx.x")
    return Case(s, C, [A, W])


def legal_double_buffered_matmul():
    """The SGEMM ladder's double-buffered rung (register-staged shared tiles) on 32x32x16."""
    sgemm_ladder = examples_module("sgemm_ladder")

    out = sgemm_ladder.algorithm(32, 32, 16)
    s = tc.create_schedule(out)
    CL = s.cache_write(out, "local")
    sgemm_ladder.blocktile_2d(s, out, CL, "A", "B", BM=16, BN=16, BK=4, TM=4, TN=4, transpose_a=True,
                              double_buffer=True)
    A, B = sorted(s.placeholders, key=lambda t: t.op.order)
    return Case(s, out, [A, B])


def legal_reassociated_sum():
    """k split and its halves swapped: legal, but the sum is accumulated in another order."""
    A, W, C = matmul(4, 4, 16)
    s = tc.create_schedule(C)
    (k,) = s[C].reduce_axis
    ko, ki = s[C].split(k, 4)
    s[C].reorder(ki, ko)
    return Case(s, C, [A, W], reassociates=True)


def legal_reduction_loop_outermost():
    A, W, C = matmul(4, 4, 8)
    s = tc.create_schedule(C)
    i, j = s[C].axis
    (k,) = s[C].reduce_axis
    s[C].reorder(k, i, j)
    s[C].bind(i, "threadIdx.y")
    s[C].bind(j, "threadIdx.x")
    return Case(s, C, [A, W])


def legal_shared_refilled_per_row(level):
    """The shared P is refilled at every i_o, computed at i_o itself or at the loop i_i of
    one iteration inside it: either way lowering ends the loop with a barrier, since i_o
    runs it again (without it a fast thread would overwrite P while another reads it)."""
    X = tc.placeholder((6, 8), "float32", name="X")
    P = tc.compute((6, 8), lambda i, j: X[i, j] * 2.0, name="P")
    O = tc.compute((6, 8), lambda i, j: P[i, 7 - j] + 1.0, name="O")
    s = tc.create_schedule(O)
    i, j = s[O].axis
    io, ii = s[O].split(i, 1)
    s[O].bind(j, "threadIdx.x")
    s[P].compute_at(s[O], {"i_o": io, "i_i": ii}[level])
    s[P].set_scope("shared")
    s[P].bind(s[P].axis[1], "threadIdx.x")
    return Case(s, O, [X])


def legal_bf16_epilogue(placement):
    """The bf16 rounding point between the matmul and SiLU survives every placement."""
    A, W, C, Cb, Y, Q = ffn_bf16()
    s = tc.create_schedule(Q)
    i, j = s[Q].axis
    ci, cj = s[C].axis
    if placement != "all_root":
        s[Y].compute_inline()
        if placement != "cast_kept":
            s[Cb].compute_inline()
    if placement == "epilogue_at_i":
        s[Q].reverse_compute_at(s[C], ci)
    elif placement == "epilogue_at_j":
        s[Q].reverse_compute_at(s[C], cj)
    elif placement == "matmul_at_j":
        s[C].compute_at(s[Q], j)
    elif placement == "matmul_at_i":
        s[C].compute_at(s[Q], i)
    elif placement == "cast_kept":
        s[Cb].compute_at(s[Q], j)
        s[C].compute_at(s[Cb], s[Cb].axis[1])
    return Case(s, Q, [A, W], exact=True, extra={"placement": placement})


def examples_module(name: str):
    """A workload file of examples/ (imported as a module)."""
    import importlib
    import sys

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")
    if path not in sys.path:
        sys.path.insert(0, path)
    return importlib.import_module(name)


def legal_ffn_schedule_small():
    """The fused bf16 FFN example (examples/ffn_bf16.py, its double-buffered CUDA-core
    schedule) on 32x32x16."""
    ffn = examples_module("ffn_bf16")
    out = ffn.algorithm(32, 32, 16)
    s = tc.create_schedule(out)
    ffn.cuda_cores(s, out)
    return Case(s, out, sorted(s.placeholders, key=lambda t: t.op.order))


def legal_ffn_tensor_cores_small():
    """The same on the tensor cores (its ``schedule``: one warp of 2 x 4 mma tiles, k steps
    of 16): the instruction's sums are a reassociation."""
    ffn = examples_module("ffn_bf16")
    out = ffn.algorithm(32, 32, 16)
    s = tc.create_schedule(out)
    ffn.schedule(s, out)
    return Case(s, out, sorted(s.placeholders, key=lambda t: t.op.order), reassociates=True)


LEGAL = (
    [(f"epilogue_{act}_at_{lv}", lambda act=act, lv=lv: legal_epilogue_after_reduction(act, lv))
     for act in ACTS for lv in ("i", "j")]
    + [(f"matmul_at_{lv}", lambda lv=lv: legal_matmul_at_every_level(lv)) for lv in ("io", "jo", "ii", "ji")]
    + [(f"rowmax_at_{lv}", lambda lv=lv: legal_rowmax_at(lv)) for lv in ("i", "j")]
    + [("quant_after_rowmax", legal_quant_after_rowmax), ("rowmax_shared_per_block", legal_rowmax_shared_per_block),
       ("softmax_fused_rows", legal_softmax_fused_rows),
       ("softmax_shared_rows_threads", legal_softmax_shared_rows_threads),
       ("softmax_epilogue_after_sum", legal_softmax_epilogue_after_sum)]
    + [(f"swiglu_fused_at_{lv}", lambda lv=lv: legal_swiglu_fused_at(lv)) for lv in ("i", "j")]
    + [("swiglu_epilogue_behind_gate", legal_swiglu_epilogue_behind_gate)]
    + [(f"chain_{v}", lambda v=v: legal_chain(v)) for v in ("inline", "at_i", "at_j", "reverse")]
    + [("blocktile_matmul", legal_blocktile_matmul), ("double_buffered_matmul", legal_double_buffered_matmul),
       ("reassociated_sum", legal_reassociated_sum),
       ("reduction_loop_outermost", legal_reduction_loop_outermost),
       ("shared_refilled_in_a_one_iteration_loop", legal_shared_refilled_in_a_one_iteration_loop)]
    + [(f"shared_refilled_per_row_at_{lv}", lambda lv=lv: legal_shared_refilled_per_row(lv)) for lv in ("i_o", "i_i")]
    + [("ffn_schedule_small", legal_ffn_schedule_small), ("ffn_tensor_cores_small", legal_ffn_tensor_cores_small)]
    + [(f"bf16_{p}", lambda p=p: legal_bf16_epilogue(p))
       for p in ("all_root", "epilogue_at_i", "epilogue_at_j", "matmul_at_i", "matmul_at_j", "cast_kept")]
)


# ---------------------------------------------------------------------- running


def make_inputs(case: Case, seed: int = 0) -> list:
    from tcomp.dtypes import host_dtype

    rng = np.random.default_rng(seed)
    return [rng.standard_normal(t.shape).astype(np.float32).astype(host_dtype(t.dtype)) for t in case.inputs]


def run(case: Case, arrays, check: bool = True):
    """Build and run the case's schedule on ``arrays``; returns the output."""
    from tcomp.dtypes import host_dtype

    mod = tc.build(case.s, check=check)
    out = np.zeros(case.out.shape, dtype=host_dtype(case.out.dtype))
    mod(*arrays, out)
    return out


def same(got, want, dtype: str) -> bool:
    """Equal to the reference up to float rounding (int8: up to one step in a few
    elements, a value at a rounding tie may go either way)."""
    got, want = np.asarray(got), np.asarray(want)
    if dtype == "int8":
        diff = np.abs(got.astype(np.int64) - want.astype(np.int64))
        return diff.max() <= 1 and np.count_nonzero(diff) <= 2
    g, w = got.astype(np.float64), want.astype(np.float64)
    return bool(np.all(np.isfinite(g)) and np.allclose(g, w, rtol=1e-5, atol=1e-5))
