"""An elementwise chain in bfloat16: Q = quantize(silu(X) * G, 0.05, int8) (the gate
and multiply of SwiGLU, then int8 quantization with a fixed scale). Three operators, so
four partitions into kernels; the hand schedule fuses all three into one kernel that
reads X and G once, eight elements (16 bytes) per thread and load.

    tcomp check examples/silu_mul_quant.py
    tcomp autoschedule examples/silu_mul_quant.py --shape M=64,N=64 --model-only
"""

import tcomp as tc

SCALE = 0.05


def algorithm(M=8192, N=8192):
    """Q = quantize(silu(X) * G, 0.05, int8) with X, G in bfloat16."""
    X = tc.placeholder((M, N), "bfloat16", name="X")
    G = tc.placeholder((M, N), "bfloat16", name="G")
    Y = tc.compute((M, N), lambda i, j: tc.silu(X[i, j]), name="Y")
    Z = tc.compute((M, N), lambda i, j: Y[i, j] * G[i, j], name="Z")
    return tc.compute((M, N), lambda i, j: tc.quantize(Z[i, j], SCALE, "int8"), name="Q")


def schedule(s, out):
    """One kernel: SiLU and the multiply inlined, the output flattened into vectors of 8
    elements, 256 threads a block."""
    s["Y"].compute_inline()
    s["Z"].compute_inline()
    i, j = s[out].axis
    flat = s[out].fuse(i, j)
    flat, lanes = s[out].split(flat, 8)
    s[out].vectorize(lanes)
    block, thread = s[out].split(flat, 256)
    s[out].bind(block, "blockIdx.x")
    s[out].bind(thread, "threadIdx.x")
