"""Schedule of gemm_bf16.py found by tcomp autoschedule.

workload: examples/gemm_bf16.py
shape:    M=4000, N=4000, K=1000
target:   NVIDIA H200 (132 SMs)
measured: 87.6 us, predicted 70.9 us
point:    C: wgmma_tiling BK=64 BM=192 BN=192 rows_fastest=False split_k=1 stages=4
date:     2026-12-05

    tcomp bench examples/gemm_bf16.py --schedule schedules/gemm_bf16_4000x4000x1000.py --shape M=4000,N=4000,K=1000
"""

def schedule(s, out):
    s.cache_write('C', 'local')
    s.cache_read('A', 'shared', ['C_local'])
    s.cache_read('W', 'shared', ['C_local'])
    C_i, C_j = s['C'].axis
    C_i_o, C_j_o, C_i_i, C_j_i = s['C'].tile(C_i, C_j, 192, 192)
    s['C'].bind(C_i_o, 'blockIdx.y')
    s['C'].bind(C_j_o, 'blockIdx.x')
    C_i_i_o, C_i_i_i = s['C'].split(C_i_i, 64)
    C_i_i_i_o, C_i_i_i_i = s['C'].split(C_i_i_i, 16)
    C_i_i_i_i_o, C_i_i_i_i_i = s['C'].split(C_i_i_i_i, 8)
    C_j_i_o, C_j_i_i = s['C'].split(C_j_i, 8)
    C_j_i_i_o, C_j_i_i_i = s['C'].split(C_j_i_i, 2)
    s['C'].reorder(C_i_i_o, C_i_i_i_o, C_i_i_i_i_i, C_j_i_i_o, C_j_i_o, C_i_i_i_i_o, C_j_i_i_i)
    C_i_i_i_o_i_i_i_i_i_f = s['C'].fuse(C_i_i_i_o, C_i_i_i_i_i)
    C_i_i_i_o_i_i_i_i_i_f_j_i_i_o_f = s['C'].fuse(C_i_i_i_o_i_i_i_i_i_f, C_j_i_i_o)
    s['C'].bind(C_i_i_o, 'threadIdx.y')
    s['C'].bind(C_i_i_i_o_i_i_i_i_i_f_j_i_i_o_f, 'threadIdx.x')
    s['C'].unroll(C_j_i_o)
    s['C'].unroll(C_i_i_i_i_o)
    s['C'].vectorize(C_j_i_i_i)
    s['C_local'].compute_at(s['C'], C_i_i_i_o_i_i_i_i_i_f_j_i_i_o_f)
    C_local_k, = s['C_local'].reduce_axis
    C_local_k_o, C_local_k_i = s['C_local'].split(C_local_k, 64)
    C_local_k_i_o, C_local_k_i_i = s['C_local'].split(C_local_k_i, 16)
    C_local_i, C_local_j = s['C_local'].axis
    s['C_local'].reorder(C_local_k_o, C_local_k_i_o, C_local_k_i_i, C_local_i, C_local_j)
    s['C_local'].unroll(C_local_k_i_o)
    s['C_local'].unroll(C_local_i)
    s['C_local'].unroll(C_local_j)
    s['A_shared'].compute_at(s['C_local'], C_local_k_o)
    s['A_shared'].storage_swizzle()
    A_shared_i, A_shared_j = s['A_shared'].axis
    A_shared_i_j_f = s['A_shared'].fuse(A_shared_i, A_shared_j)
    A_shared_i_j_f_o, A_shared_i_j_f_i = s['A_shared'].split(A_shared_i_j_f, 8)
    s['A_shared'].vectorize(A_shared_i_j_f_i)
    A_shared_i_j_f_o_o, A_shared_i_j_f_o_i = s['A_shared'].split(A_shared_i_j_f_o, 384)
    A_shared_i_j_f_o_i_o, A_shared_i_j_f_o_i_i = s['A_shared'].split(A_shared_i_j_f_o_i, 128)
    s['A_shared'].bind(A_shared_i_j_f_o_i_o, 'threadIdx.y')
    s['A_shared'].bind(A_shared_i_j_f_o_i_i, 'threadIdx.x')
    s['A_shared'].unroll(A_shared_i_j_f_o_o)
    s['A_shared'].pipeline(4, reader_lag=1)
    s['W_shared'].compute_at(s['C_local'], C_local_k_o)
    s['W_shared'].storage_swizzle()
    W_shared_i, W_shared_j = s['W_shared'].axis
    W_shared_i_j_f = s['W_shared'].fuse(W_shared_i, W_shared_j)
    W_shared_i_j_f_o, W_shared_i_j_f_i = s['W_shared'].split(W_shared_i_j_f, 8)
    s['W_shared'].vectorize(W_shared_i_j_f_i)
    W_shared_i_j_f_o_o, W_shared_i_j_f_o_i = s['W_shared'].split(W_shared_i_j_f_o, 384)
    W_shared_i_j_f_o_i_o, W_shared_i_j_f_o_i_i = s['W_shared'].split(W_shared_i_j_f_o_i, 128)
    s['W_shared'].bind(W_shared_i_j_f_o_i_o, 'threadIdx.y')
    s['W_shared'].bind(W_shared_i_j_f_o_i_i, 'threadIdx.x')
    s['W_shared'].unroll(W_shared_i_j_f_o_o)
    s['W_shared'].pipeline(4, reader_lag=1)
    s['C_local'].tensorize(C_local_k_i_i, 'wgmma_m64n192k16')
