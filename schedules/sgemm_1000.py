"""Schedule of sgemm_ladder.py found by tcomp autoschedule.

workload: examples/sgemm_ladder.py
shape:    M=1000, N=1000, K=1000
target:   NVIDIA H200 (132 SMs)
measured: 67.8 us, predicted 66.8 us
point:    C: warp_tiling BK=8 BM=64 BN=128 TM=8 TN=4 WM=32 WN=64 WNITER=2 double_buffer=True k_unroll=8 pipeline=0 split_k=2
date:     2026-12-01

    tcomp bench examples/sgemm_ladder.py --schedule schedules/sgemm_1000.py --shape M=1000,N=1000,K=1000
"""

def schedule(s, out):
    s.rfactor('C', 2)
    s.cache_write('C_rf', 'local')
    C_rf_p, C_rf_i, C_rf_j = s['C_rf'].axis
    s['C_rf'].bind(C_rf_p, 'blockIdx.z')
    C_i, C_j = s['C'].axis
    C_i_j_f = s['C'].fuse(C_i, C_j)
    C_i_j_f_o, C_i_j_f_i = s['C'].split(C_i_j_f, 256)
    s['C'].bind(C_i_j_f_o, 'blockIdx.x')
    s['C'].bind(C_i_j_f_i, 'threadIdx.x')
    s.cache_read('A', 'shared', ['C_rf_local'])
    s.cache_read('B', 'shared', ['C_rf_local'])
    s.cache_read('A_shared', 'local', ['C_rf_local'])
    s.cache_read('B_shared', 'local', ['C_rf_local'])
    C_rf_i_o, C_rf_j_o, C_rf_i_i, C_rf_j_i = s['C_rf'].tile(C_rf_i, C_rf_j, 64, 128)
    C_rf_i_i_o, C_rf_i_i_i = s['C_rf'].split(C_rf_i_i, 32)
    C_rf_j_i_o, C_rf_j_i_i = s['C_rf'].split(C_rf_j_i, 64)
    C_rf_i_i_i_o, C_rf_i_i_i_i = s['C_rf'].split(C_rf_i_i_i, 32)
    C_rf_j_i_i_o, C_rf_j_i_i_i = s['C_rf'].split(C_rf_j_i_i, 32)
    C_rf_i_i_i_i_o, C_rf_i_i_i_i_i = s['C_rf'].split(C_rf_i_i_i_i, 8)
    C_rf_j_i_i_i_o, C_rf_j_i_i_i_i = s['C_rf'].split(C_rf_j_i_i_i, 4)
    s['C_rf'].reorder(C_rf_p, C_rf_i_o, C_rf_j_o, C_rf_i_i_o, C_rf_j_i_o, C_rf_i_i_i_i_o, C_rf_j_i_i_i_o, C_rf_i_i_i_o, C_rf_j_i_i_o, C_rf_i_i_i_i_i, C_rf_j_i_i_i_i)
    C_rf_i_i_o_j_i_o_f = s['C_rf'].fuse(C_rf_i_i_o, C_rf_j_i_o)
    C_rf_i_i_i_i_o_j_i_i_i_o_f = s['C_rf'].fuse(C_rf_i_i_i_i_o, C_rf_j_i_i_i_o)
    s['C_rf'].bind(C_rf_i_o, 'blockIdx.y')
    s['C_rf'].bind(C_rf_j_o, 'blockIdx.x')
    s['C_rf'].bind(C_rf_i_i_o_j_i_o_f, 'threadIdx.y')
    s['C_rf'].bind(C_rf_i_i_i_i_o_j_i_i_i_o_f, 'threadIdx.x')
    s['C_rf'].unroll(C_rf_i_i_i_o)
    s['C_rf'].unroll(C_rf_j_i_i_o)
    s['C_rf'].unroll(C_rf_i_i_i_i_i)
    s['C_rf'].unroll(C_rf_j_i_i_i_i)
    s['C_rf_local'].compute_at(s['C_rf'], C_rf_i_i_i_i_o_j_i_i_i_o_f)
    C_rf_local_k, = s['C_rf_local'].reduce_axis
    C_rf_local_k_o, C_rf_local_k_i = s['C_rf_local'].split(C_rf_local_k, 8)
    C_rf_local_p, C_rf_local_i, C_rf_local_j = s['C_rf_local'].axis
    s['C_rf_local'].reorder(C_rf_local_k_o, C_rf_local_k_i, C_rf_local_i, C_rf_local_j)
    s['C_rf_local'].unroll(C_rf_local_i)
    s['C_rf_local'].unroll(C_rf_local_j)
    C_rf_local_k_i_o, C_rf_local_k_i_i = s['C_rf_local'].split(C_rf_local_k_i, 8)
    s['C_rf_local'].unroll(C_rf_local_k_i_i)
    s['A_shared'].compute_at(s['C_rf_local'], C_rf_local_k_o)
    s['B_shared'].compute_at(s['C_rf_local'], C_rf_local_k_o)
    s['A_shared_local'].compute_at(s['C_rf_local'], C_rf_local_k_i_i)
    s['B_shared_local'].compute_at(s['C_rf_local'], C_rf_local_k_i_i)
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
    s['B_shared'].double_buffer()
