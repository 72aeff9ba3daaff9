"""Schedule of matmul_silu_quant.py found by tcomp autoschedule.

workload: examples/matmul_silu_quant.py
shape:    M=4096, N=4096, K=4096
target:   NVIDIA H200 (132 SMs)
measured: 3.178 ms, predicted 2.558 ms
point:    Q: warp_tiling BK=16 BM=128 BN=256 TM=4 TN=4 WM=128 WN=32 WNITER=2 double_buffer=True k_unroll=4
date:     2026-12-01

    tcomp bench examples/matmul_silu_quant.py --schedule schedules/matmul_silu_quant_4096.py --shape M=4096,N=4096,K=4096
"""

def schedule(s, out):
    s['Y'].compute_inline()
    s.cache_read('A', 'shared', ['C'])
    s.cache_read('W', 'shared', ['C'])
    s.cache_read('A_shared', 'local', ['C'])
    s.cache_read('W_shared', 'local', ['C'])
    Q_i, Q_j = s['Q'].axis
    Q_i_o, Q_j_o, Q_i_i, Q_j_i = s['Q'].tile(Q_i, Q_j, 128, 256)
    Q_i_i_o, Q_i_i_i = s['Q'].split(Q_i_i, 128)
    Q_j_i_o, Q_j_i_i = s['Q'].split(Q_j_i, 32)
    Q_i_i_i_o, Q_i_i_i_i = s['Q'].split(Q_i_i_i, 32)
    Q_j_i_i_o, Q_j_i_i_i = s['Q'].split(Q_j_i_i, 16)
    Q_i_i_i_i_o, Q_i_i_i_i_i = s['Q'].split(Q_i_i_i_i, 4)
    Q_j_i_i_i_o, Q_j_i_i_i_i = s['Q'].split(Q_j_i_i_i, 4)
    s['Q'].reorder(Q_i_o, Q_j_o, Q_i_i_o, Q_j_i_o, Q_i_i_i_i_o, Q_j_i_i_i_o, Q_i_i_i_o, Q_j_i_i_o, Q_i_i_i_i_i, Q_j_i_i_i_i)
    Q_i_i_o_j_i_o_f = s['Q'].fuse(Q_i_i_o, Q_j_i_o)
    Q_i_i_i_i_o_j_i_i_i_o_f = s['Q'].fuse(Q_i_i_i_i_o, Q_j_i_i_i_o)
    s['Q'].bind(Q_i_o, 'blockIdx.y')
    s['Q'].bind(Q_j_o, 'blockIdx.x')
    s['Q'].bind(Q_i_i_o_j_i_o_f, 'threadIdx.y')
    s['Q'].bind(Q_i_i_i_i_o_j_i_i_i_o_f, 'threadIdx.x')
    s['Q'].unroll(Q_i_i_i_o)
    s['Q'].unroll(Q_j_i_i_o)
    s['Q'].unroll(Q_i_i_i_i_i)
    s['Q'].unroll(Q_j_i_i_i_i)
    s['C'].compute_at(s['Q'], Q_i_i_i_i_o_j_i_i_i_o_f)
    C_k, = s['C'].reduce_axis
    C_k_o, C_k_i = s['C'].split(C_k, 16)
    C_i, C_j = s['C'].axis
    s['C'].reorder(C_k_o, C_k_i, C_i, C_j)
    s['C'].unroll(C_i)
    s['C'].unroll(C_j)
    C_k_i_o, C_k_i_i = s['C'].split(C_k_i, 4)
    s['C'].unroll(C_k_i_i)
    s['A_shared'].compute_at(s['C'], C_k_o)
    s['W_shared'].compute_at(s['C'], C_k_o)
    s['A_shared_local'].compute_at(s['C'], C_k_i_i)
    s['W_shared_local'].compute_at(s['C'], C_k_i_i)
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
    A_shared_i_j_f_o_o, A_shared_i_j_f_o_i = s['A_shared'].split(A_shared_i_j_f_o, 256)
    A_shared_i_j_f_o_i_o, A_shared_i_j_f_o_i_i = s['A_shared'].split(A_shared_i_j_f_o_i, 32)
    s['A_shared'].bind(A_shared_i_j_f_o_i_o, 'threadIdx.y')
    s['A_shared'].bind(A_shared_i_j_f_o_i_i, 'threadIdx.x')
    s['A_shared'].unroll(A_shared_i_j_f_o_o)
    W_shared_i, W_shared_j = s['W_shared'].axis
    W_shared_i_j_f = s['W_shared'].fuse(W_shared_i, W_shared_j)
    W_shared_i_j_f_o, W_shared_i_j_f_i = s['W_shared'].split(W_shared_i_j_f, 4)
    s['W_shared'].vectorize(W_shared_i_j_f_i)
    W_shared_i_j_f_o_o, W_shared_i_j_f_o_i = s['W_shared'].split(W_shared_i_j_f_o, 256)
    W_shared_i_j_f_o_i_o, W_shared_i_j_f_o_i_i = s['W_shared'].split(W_shared_i_j_f_o_i, 32)
    s['W_shared'].bind(W_shared_i_j_f_o_i_o, 'threadIdx.y')
    s['W_shared'].bind(W_shared_i_j_f_o_i_i, 'threadIdx.x')
    s['W_shared'].unroll(W_shared_i_j_f_o_o)
    s['A_shared'].double_buffer()
    s['W_shared'].double_buffer()
