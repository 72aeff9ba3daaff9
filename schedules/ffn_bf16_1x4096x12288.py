"""Schedule of ffn_bf16.py found by tcomp autoschedule.

workload: examples/ffn_bf16.py
shape:    M=1, N=4096, K=12288
target:   NVIDIA H100 80GB HBM3 (132 SMs)
measured: 39.6 us, predicted 44.9 us
point:    Q: skinny_product block_parts=16 one_kernel=True parts=8 threads=256 unroll=8
date:     2026-12-06

    tcomp bench examples/ffn_bf16.py --schedule schedules/ffn_bf16_1x4096x12288.py --shape M=1,N=4096,K=12288
"""

def schedule(s, out):
    s['Cb'].compute_inline()
    s['Y'].compute_inline()
    s.rfactor('C', 16)
    s.cache_write('C_rf', 'local')
    s.rfactor('C_rf_local', 8)
    s.cache_write('C_rf_local_rf', 'local')
    C_rf_p, C_rf_i, C_rf_j = s['C_rf'].axis
    s['C_rf'].bind(C_rf_p, 'blockIdx.y')
    C_rf_j_o, C_rf_j_i = s['C_rf'].split(C_rf_j, 256)
    s['C_rf'].reorder(C_rf_j_o, C_rf_i, C_rf_j_i)
    s['C_rf'].bind(C_rf_j_o, 'blockIdx.x')
    C_rf_i_j_i_f = s['C_rf'].fuse(C_rf_i, C_rf_j_i)
    C_rf_i_j_i_f_o, C_rf_i_j_i_f_i = s['C_rf'].split(C_rf_i_j_i_f, 32)
    s['C_rf'].bind(C_rf_i_j_i_f_o, 'threadIdx.y')
    s['C_rf'].bind(C_rf_i_j_i_f_i, 'threadIdx.x')
    s['C_rf_local_rf'].set_scope('shared')
    s['C_rf_local_rf'].compute_at(s['C_rf'], C_rf_j_o)
    C_rf_local_rf_p2, C_rf_local_rf_p, C_rf_local_rf_i, C_rf_local_rf_j = s['C_rf_local_rf'].axis
    C_rf_local_rf_j_o, C_rf_local_rf_j_i = s['C_rf_local_rf'].split(C_rf_local_rf_j, 8)
    s['C_rf_local_rf'].reorder(C_rf_local_rf_p2, C_rf_local_rf_j_o, C_rf_local_rf_i, C_rf_local_rf_j_i)
    s['C_rf_local_rf'].bind(C_rf_local_rf_p2, 'threadIdx.y')
    s['C_rf_local_rf'].bind(C_rf_local_rf_j_o, 'threadIdx.x')
    s['C_rf_local_rf'].unroll(C_rf_local_rf_i)
    s['C_rf_local_rf'].vectorize(C_rf_local_rf_j_i)
    s['C_rf_local_rf_local'].compute_at(s['C_rf_local_rf'], C_rf_local_rf_j_o)
    C_rf_local_rf_local_k, = s['C_rf_local_rf_local'].reduce_axis
    C_rf_local_rf_local_k_o, C_rf_local_rf_local_k_i = s['C_rf_local_rf_local'].split(C_rf_local_rf_local_k, 8)
    C_rf_local_rf_local_p2, C_rf_local_rf_local_p, C_rf_local_rf_local_i, C_rf_local_rf_local_j = s['C_rf_local_rf_local'].axis
    s['C_rf_local_rf_local'].reorder(C_rf_local_rf_local_k_o, C_rf_local_rf_local_k_i, C_rf_local_rf_local_p2, C_rf_local_rf_local_p, C_rf_local_rf_local_i, C_rf_local_rf_local_j)
    s['C_rf_local_rf_local'].unroll(C_rf_local_rf_local_k_i)
    s['C_rf_local_rf_local'].unroll(C_rf_local_rf_local_i)
    s['C_rf_local_rf_local'].unroll(C_rf_local_rf_local_j)
    s.cache_read('W', 'local', ['C_rf_local_rf_local'])
    s['W_local'].compute_at(s['C_rf_local_rf_local'], C_rf_local_rf_local_k_i)
    W_local_i, W_local_j = s['W_local'].axis
    s['W_local'].vectorize(W_local_j)
    s.cache_read('A', 'local', ['C_rf_local_rf_local'])
    s['A_local'].compute_at(s['C_rf_local_rf_local'], C_rf_local_rf_local_k_o)
    A_local_i, A_local_j = s['A_local'].axis
    s['A_local'].unroll(A_local_i)
    s['A_local'].vectorize(A_local_j)
    s['C_rf_local'].compute_at(s['C_rf'], C_rf_i_j_i_f_i)
    Q_i, Q_j = s['Q'].axis
    Q_i_j_f = s['Q'].fuse(Q_i, Q_j)
    Q_i_j_f_o, Q_i_j_f_i = s['Q'].split(Q_i_j_f, 256)
    s['Q'].bind(Q_i_j_f_o, 'blockIdx.x')
    s['Q'].bind(Q_i_j_f_i, 'threadIdx.x')
    s['C'].compute_at(s['Q'], Q_i_j_f_i)
    C_p, = s['C'].reduce_axis
    C_p_o, C_p_i = s['C'].split(C_p, 8)
    s['C'].unroll(C_p_i)
