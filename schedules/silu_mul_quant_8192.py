"""Schedule of silu_mul_quant.py found by tcomp autoschedule.

workload: examples/silu_mul_quant.py
shape:    M=8192, N=8192
target:   NVIDIA H200 (132 SMs)
measured: 94.0 us, predicted 84.9 us
point:    Q: flat_tiling threads=1024 vector=8
date:     2026-12-01

    tcomp bench examples/silu_mul_quant.py --schedule schedules/silu_mul_quant_8192.py --shape M=8192,N=8192
"""

def schedule(s, out):
    s['Y'].compute_inline()
    s['Z'].compute_inline()
    Q_i, Q_j = s['Q'].axis
    Q_i_j_f = s['Q'].fuse(Q_i, Q_j)
    Q_i_j_f_o, Q_i_j_f_i = s['Q'].split(Q_i_j_f, 8)
    s['Q'].vectorize(Q_i_j_f_i)
    Q_i_j_f_o_o, Q_i_j_f_o_i = s['Q'].split(Q_i_j_f_o, 1024)
    s['Q'].bind(Q_i_j_f_o_o, 'blockIdx.x')
    s['Q'].bind(Q_i_j_f_o_i, 'threadIdx.x')
