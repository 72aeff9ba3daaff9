"""Schedule of sgemm_ladder.py found by tcomp autoschedule.

workload: examples/sgemm_ladder.py
shape:    M=2048, N=8192, K=1024
target:   NVIDIA H200 (132 SMs)
measured: 746.5 us, predicted 724.9 us
point:    C: warp_tiling BK=8 BM=128 BN=128 TM=4 TN=4 WM=32 WN=128 WNITER=2 double_buffer=True k_unroll=8 pipeline=3 split_k=1
date:     2026-12-01

    tcomp bench examples/sgemm_ladder.py --schedule schedules/sgemm_2048x8192x1024.py --shape M=2048,N=8192,K=1024
"""

def schedule(s, out):
    s.cache_write('C', 'local')
    s.cache_read('A', 'shared', ['C_local'])
    s.cache_read('B', 'shared', ['C_local'])
    s.cache_read('A_shared', 'local', ['C_local'])
    s.cache_read('B_shared', 'local', ['C_local'])
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
    C_local_k_o, C_local_k_i = s['C_local'].split(C_local_k, 8)
    C_local_i, C_local_j = s['C_local'].axis
    s['C_local'].reorder(C_local_k_o, C_local_k_i, C_local_i, C_local_j)
    s['C_local'].unroll(C_local_i)
    s['C_local'].unroll(C_local_j)
    C_local_k_i_o, C_local_k_i_i = s['C_local'].split(C_local_k_i, 8)
    s['C_local'].unroll(C_local_k_i_i)
    s['A_shared'].compute_at(s['C_local'], C_local_k_o)
    s['B_shared'].compute_at(s['C_local'], C_local_k_o)
    s['A_shared_local'].compute_at(s['C_local'], C_local_k_i_i)
    s['B_shared_local'].compute_at(s['C_local'], C_local_k_i_i)
    A_shared_local_i, A_shared_local_j = s['A_shared_local'].axis
    s['A_shared_local'].unroll(A_shared_local_i)
    s['A_shared_local'].unroll(A_shared_local_j)
    B_shared_local_i, B_shared_local_j = s['B_shared_local'].axis
    s['B_shared_local'].unroll(B_shared_local_i)
    s['B_shared_local'].unroll(B_shared_local_j)
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
    B_shared_i, B_shared_j = s['B_shared'].axis
    B_shared_i_j_f = s['B_shared'].fuse(B_shared_i, B_shared_j)
    B_shared_i_j_f_o, B_shared_i_j_f_i = s['B_shared'].split(B_shared_i_j_f, 4)
    s['B_shared'].vectorize(B_shared_i_j_f_i)
    B_shared_i_j_f_o_o, B_shared_i_j_f_o_i = s['B_shared'].split(B_shared_i_j_f_o, 128)
    B_shared_i_j_f_o_i_o, B_shared_i_j_f_o_i_i = s['B_shared'].split(B_shared_i_j_f_o_i, 32)
    s['B_shared'].bind(B_shared_i_j_f_o_i_o, 'threadIdx.y')
    s['B_shared'].bind(B_shared_i_j_f_o_i_i, 'threadIdx.x')
    s['B_shared'].unroll(B_shared_i_j_f_o_o)
    s['A_shared'].double_buffer()
    s['B_shared'].pipeline(3)
