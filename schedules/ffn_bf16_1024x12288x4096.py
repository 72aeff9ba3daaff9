"""Schedule of ffn_bf16.py found by tcomp autoschedule.

workload: examples/ffn_bf16.py
shape:    M=1024, N=12288, K=4096
target:   NVIDIA H200 (132 SMs)
measured: 2.863 ms, predicted 1.645 ms
point:    C: warp_tiling BK=16 BM=128 BN=128 TM=4 TN=4 WM=32 WN=128 WNITER=2 double_buffer=False k_unroll=2; Q: flat_tiling threads=128 vector=2
date:     2026-12-01

    tcomp bench examples/ffn_bf16.py --schedule schedules/ffn_bf16_1024x12288x4096.py --shape M=1024,N=12288,K=4096
"""

def schedule(s, out):
    s.cache_write('C', 'local')
    s.cache_read('A', 'shared', ['C_local'])
    s.cache_read('W', 'shared', ['C_local'])
    s.cache_read('A_shared', 'local', ['C_local'])
    s.cache_read('W_shared', 'local', ['C_local'])
    C_i, C_j = s['C'].axis
    C_i_o, C_j_o, C_i_i, C_j_i = s['C'].tile(C_i, C_j, 128, 128)
    C_i_i_o, C_i_i_i = s['C'].split(C_i_i, 32)
    C_j_i_o, C_j_i_i = s['C'].split(C_j_i, 128)
    C_i_i_i_o, C_i_i_i_i = s['C'].split(C_i_i_i, 8)
    C_j_i_i_o, C_j_i_i_i = s['C'].split(C_j_i_i, 64)
    C_i_i_i_i_o, C_i_i_i_i_i = s['C'].split(C_i_i_i_i, 4)
    C_j_i_i_i_o, C_j_i_i_i_i = s['C'].split(C_j_i_i_i, 4)
    s['C'].reorder(C_i_o, C_j_o, C_i_i_o, C_j_i_o, C_i_i_i_i_o, C_j_i_i_i_o, C_i_i_i_o, C_j_i_i_o, C_i_i_i_i_i, C_j_i_i_i_i)
    C_i_i_o_j_i_o_f = s['C'].fuse(C_i_i_o, C_j_i_o)
    C_i_i_i_i_o_j_i_i_i_o_f = s['C'].fuse(C_i_i_i_i_o, C_j_i_i_i_o)
    s['C'].bind(C_i_o, 'blockIdx.y')
    s['C'].bind(C_j_o, 'blockIdx.x')
    s['C'].bind(C_i_i_o_j_i_o_f, 'threadIdx.y')
    s['C'].bind(C_i_i_i_i_o_j_i_i_i_o_f, 'threadIdx.x')
    s['C'].unroll(C_i_i_i_o)
    s['C'].unroll(C_j_i_i_o)
    s['C'].unroll(C_i_i_i_i_i)
    s['C'].unroll(C_j_i_i_i_i)
    s['C_local'].compute_at(s['C'], C_i_i_i_i_o_j_i_i_i_o_f)
    C_local_k, = s['C_local'].reduce_axis
    C_local_k_o, C_local_k_i = s['C_local'].split(C_local_k, 16)
    C_local_i, C_local_j = s['C_local'].axis
    s['C_local'].reorder(C_local_k_o, C_local_k_i, C_local_i, C_local_j)
    s['C_local'].unroll(C_local_i)
    s['C_local'].unroll(C_local_j)
    C_local_k_i_o, C_local_k_i_i = s['C_local'].split(C_local_k_i, 2)
    s['C_local'].unroll(C_local_k_i_i)
    s['A_shared'].compute_at(s['C_local'], C_local_k_o)
    s['W_shared'].compute_at(s['C_local'], C_local_k_o)
    s['A_shared_local'].compute_at(s['C_local'], C_local_k_i_i)
    s['W_shared_local'].compute_at(s['C_local'], C_local_k_i_i)
    A_shared_local_i, A_shared_local_j = s['A_shared_local'].axis
    s['A_shared_local'].unroll(A_shared_local_i)
    s['A_shared_local'].unroll(A_shared_local_j)
    W_shared_local_i, W_shared_local_j = s['W_shared_local'].axis
    s['W_shared_local'].unroll(W_shared_local_i)
    s['W_shared_local'].unroll(W_shared_local_j)
    A_shared_i, A_shared_j = s['A_shared'].axis
    s['A_shared'].storage_order(A_shared_j, A_shared_i)
    A_shared_i_j_f = s['A_shared'].fuse(A_shared_i, A_shared_j)
    A_shared_i_j_f_o, A_shared_i_j_f_i = s['A_shared'].split(A_shared_i_j_f, 4)
    s['A_shared'].vectorize(A_shared_i_j_f_i)
    A_shared_i_j_f_o_o, A_shared_i_j_f_o_i = s['A_shared'].split(A_shared_i_j_f_o, 128)
    A_shared_i_j_f_o_i_o, A_shared_i_j_f_o_i_i = s['A_shared'].split(A_shared_i_j_f_o_i, 32)
    s['A_shared'].bind(A_shared_i_j_f_o_i_o, 'threadIdx.y')
    s['A_shared'].bind(A_shared_i_j_f_o_i_i, 'threadIdx.x')
    s['A_shared'].unroll(A_shared_i_j_f_o_o)
    W_shared_i, W_shared_j = s['W_shared'].axis
    W_shared_i_j_f = s['W_shared'].fuse(W_shared_i, W_shared_j)
    W_shared_i_j_f_o, W_shared_i_j_f_i = s['W_shared'].split(W_shared_i_j_f, 4)
    s['W_shared'].vectorize(W_shared_i_j_f_i)
    W_shared_i_j_f_o_o, W_shared_i_j_f_o_i = s['W_shared'].split(W_shared_i_j_f_o, 128)
    W_shared_i_j_f_o_i_o, W_shared_i_j_f_o_i_i = s['W_shared'].split(W_shared_i_j_f_o_i, 32)
    s['W_shared'].bind(W_shared_i_j_f_o_i_o, 'threadIdx.y')
    s['W_shared'].bind(W_shared_i_j_f_o_i_i, 'threadIdx.x')
    s['W_shared'].unroll(W_shared_i_j_f_o_o)
    s['Cb'].compute_inline()
    s['Y'].compute_inline()
    Q_i, Q_j = s['Q'].axis
    Q_i_j_f = s['Q'].fuse(Q_i, Q_j)
    Q_i_j_f_o, Q_i_j_f_i = s['Q'].split(Q_i_j_f, 2)
    s['Q'].vectorize(Q_i_j_f_i)
    Q_i_j_f_o_o, Q_i_j_f_o_i = s['Q'].split(Q_i_j_f_o, 128)
    s['Q'].bind(Q_i_j_f_o_o, 'blockIdx.x')
    s['Q'].bind(Q_i_j_f_o_i, 'threadIdx.x')
