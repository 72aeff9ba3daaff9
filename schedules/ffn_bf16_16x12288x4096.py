"""Schedule of ffn_bf16.py found by tcomp autoschedule.

workload: examples/ffn_bf16.py
shape:    M=16, N=12288, K=4096
target:   NVIDIA H100 80GB HBM3 (132 SMs)
measured: 40.5 us, predicted 40.5 us
point:    Q: mma_tiling BK=128 BM=16 BN=96 WM=16 WN=16 rows_fastest=False split_k=1 stages=4
date:     2026-12-06

    tcomp bench examples/ffn_bf16.py --schedule schedules/ffn_bf16_16x12288x4096.py --shape M=16,N=12288,K=4096
"""

def schedule(s, out):
    s['Cb'].compute_inline()
    s['Y'].compute_inline()
    s.cache_read('A', 'shared', ['C'])
    s.cache_read('W', 'shared', ['C'])
    Q_i, Q_j = s['Q'].axis
    Q_i_o, Q_j_o, Q_i_i, Q_j_i = s['Q'].tile(Q_i, Q_j, 16, 96)
    Q_i_i_o, Q_i_i_i = s['Q'].split(Q_i_i, 16)
    Q_j_i_o, Q_j_i_i = s['Q'].split(Q_j_i, 16)
    Q_i_i_i_o, Q_i_i_i_i = s['Q'].split(Q_i_i_i, 16)
    Q_j_i_i_o, Q_j_i_i_i = s['Q'].split(Q_j_i_i, 8)
    Q_i_i_i_i_o, Q_i_i_i_i_i = s['Q'].split(Q_i_i_i_i, 8)
    Q_j_i_i_i_o, Q_j_i_i_i_i = s['Q'].split(Q_j_i_i_i, 2)
    s['Q'].reorder(Q_i_o, Q_j_o, Q_i_i_o, Q_j_i_o, Q_i_i_i_i_i, Q_j_i_i_i_o, Q_i_i_i_o, Q_j_i_i_o, Q_i_i_i_i_o, Q_j_i_i_i_i)
    Q_i_i_o_j_i_o_f = s['Q'].fuse(Q_i_i_o, Q_j_i_o)
    Q_i_i_i_i_i_j_i_i_i_o_f = s['Q'].fuse(Q_i_i_i_i_i, Q_j_i_i_i_o)
    s['Q'].bind(Q_i_o, 'blockIdx.y')
    s['Q'].bind(Q_j_o, 'blockIdx.x')
    s['Q'].bind(Q_i_i_o_j_i_o_f, 'threadIdx.y')
    s['Q'].bind(Q_i_i_i_i_i_j_i_i_i_o_f, 'threadIdx.x')
    s['Q'].unroll(Q_i_i_i_o)
    s['Q'].unroll(Q_j_i_i_o)
    s['Q'].unroll(Q_i_i_i_i_o)
    s['Q'].vectorize(Q_j_i_i_i_i)
    s['C'].compute_at(s['Q'], Q_i_i_i_i_i_j_i_i_i_o_f)
    C_k, = s['C'].reduce_axis
    C_k_o, C_k_i = s['C'].split(C_k, 128)
    C_k_i_o, C_k_i_i = s['C'].split(C_k_i, 16)
    C_i, C_j = s['C'].axis
    C_i_o, C_i_i = s['C'].split(C_i, 2)
    C_j_o, C_j_i = s['C'].split(C_j, 2)
    s['C'].reorder(C_k_o, C_k_i_o, C_i_o, C_j_o, C_k_i_i, C_i_i, C_j_i)
    s['C'].unroll(C_k_i_o)
    s['C'].unroll(C_i_o)
    s['C'].unroll(C_j_o)
    s['C'].unroll(C_i_i)
    s['C'].unroll(C_j_i)
    s['A_shared'].compute_at(s['C'], C_k_o)
    A_shared_i, A_shared_j = s['A_shared'].axis
    s['A_shared'].storage_pad(A_shared_j, 8)
    A_shared_i_j_f = s['A_shared'].fuse(A_shared_i, A_shared_j)
    A_shared_i_j_f_o, A_shared_i_j_f_i = s['A_shared'].split(A_shared_i_j_f, 8)
    s['A_shared'].vectorize(A_shared_i_j_f_i)
    A_shared_i_j_f_o_o, A_shared_i_j_f_o_i = s['A_shared'].split(A_shared_i_j_f_o, 192)
    A_shared_i_j_f_o_i_o, A_shared_i_j_f_o_i_i = s['A_shared'].split(A_shared_i_j_f_o_i, 32)
    s['A_shared'].bind(A_shared_i_j_f_o_i_o, 'threadIdx.y')
    s['A_shared'].bind(A_shared_i_j_f_o_i_i, 'threadIdx.x')
    s['A_shared'].unroll(A_shared_i_j_f_o_o)
    s['A_shared'].pipeline(4)
    s['W_shared'].compute_at(s['C'], C_k_o)
    W_shared_i, W_shared_j = s['W_shared'].axis
    s['W_shared'].storage_pad(W_shared_j, 8)
    W_shared_i_j_f = s['W_shared'].fuse(W_shared_i, W_shared_j)
    W_shared_i_j_f_o, W_shared_i_j_f_i = s['W_shared'].split(W_shared_i_j_f, 8)
    s['W_shared'].vectorize(W_shared_i_j_f_i)
    W_shared_i_j_f_o_o, W_shared_i_j_f_o_i = s['W_shared'].split(W_shared_i_j_f_o, 192)
    W_shared_i_j_f_o_i_o, W_shared_i_j_f_o_i_i = s['W_shared'].split(W_shared_i_j_f_o_i, 32)
    s['W_shared'].bind(W_shared_i_j_f_o_i_o, 'threadIdx.y')
    s['W_shared'].bind(W_shared_i_j_f_o_i_i, 'threadIdx.x')
    s['W_shared'].unroll(W_shared_i_j_f_o_o)
    s['W_shared'].pipeline(4)
    s['C'].tensorize(C_k_i_i, 'mma_m16n8k16')
