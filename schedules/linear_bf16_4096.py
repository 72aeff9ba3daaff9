"""Schedule of linear_bf16.py found by tcomp autoschedule.

workload: examples/linear_bf16.py
shape:    M=4096, N=4096, K=4096
target:   NVIDIA H100 80GB HBM3 (132 SMs)
measured: 237.7 us, predicted 203.6 us
point:    Y: wgmma_tiling BK=64 BM=128 BN=256 rows_fastest=True stages=4
date:     2026-12-05

    tcomp bench examples/linear_bf16.py --schedule schedules/linear_bf16_4096.py --shape M=4096,N=4096,K=4096
"""

def schedule(s, out):
    s.cache_write('Y', 'local')
    s.cache_read('A', 'shared', ['Y_local'])
    s.cache_read('W', 'shared', ['Y_local'])
    Y_i, Y_j = s['Y'].axis
    Y_i_o, Y_j_o, Y_i_i, Y_j_i = s['Y'].tile(Y_i, Y_j, 128, 256)
    Y_i_i_o, Y_i_i_i = s['Y'].split(Y_i_i, 64)
    Y_i_i_i_o, Y_i_i_i_i = s['Y'].split(Y_i_i_i, 16)
    Y_i_i_i_i_o, Y_i_i_i_i_i = s['Y'].split(Y_i_i_i_i, 8)
    Y_j_i_o, Y_j_i_i = s['Y'].split(Y_j_i, 8)
    Y_j_i_i_o, Y_j_i_i_i = s['Y'].split(Y_j_i_i, 2)
    s['Y'].reorder(Y_i_o, Y_j_o, Y_i_i_o, Y_i_i_i_o, Y_i_i_i_i_i, Y_j_i_i_o, Y_j_i_o, Y_i_i_i_i_o, Y_j_i_i_i)
    Y_i_i_i_o_i_i_i_i_i_f = s['Y'].fuse(Y_i_i_i_o, Y_i_i_i_i_i)
    Y_i_i_i_o_i_i_i_i_i_f_j_i_i_o_f = s['Y'].fuse(Y_i_i_i_o_i_i_i_i_i_f, Y_j_i_i_o)
    s['Y'].bind(Y_i_o, 'blockIdx.x')
    s['Y'].bind(Y_j_o, 'blockIdx.y')
    s['Y'].bind(Y_i_i_o, 'threadIdx.y')
    s['Y'].bind(Y_i_i_i_o_i_i_i_i_i_f_j_i_i_o_f, 'threadIdx.x')
    s['Y'].unroll(Y_j_i_o)
    s['Y'].unroll(Y_i_i_i_i_o)
    s['Y'].unroll(Y_j_i_i_i)
    s['Y_local'].compute_at(s['Y'], Y_i_i_i_o_i_i_i_i_i_f_j_i_i_o_f)
    Y_local_k, = s['Y_local'].reduce_axis
    Y_local_k_o, Y_local_k_i = s['Y_local'].split(Y_local_k, 64)
    Y_local_k_i_o, Y_local_k_i_i = s['Y_local'].split(Y_local_k_i, 16)
    Y_local_i, Y_local_j = s['Y_local'].axis
    s['Y_local'].reorder(Y_local_k_o, Y_local_k_i_o, Y_local_k_i_i, Y_local_i, Y_local_j)
    s['Y_local'].unroll(Y_local_k_i_o)
    s['Y_local'].unroll(Y_local_i)
    s['Y_local'].unroll(Y_local_j)
    s['A_shared'].compute_at(s['Y_local'], Y_local_k_o)
    s['A_shared'].storage_swizzle()
    A_shared_i, A_shared_j = s['A_shared'].axis
    A_shared_i_j_f = s['A_shared'].fuse(A_shared_i, A_shared_j)
    A_shared_i_j_f_o, A_shared_i_j_f_i = s['A_shared'].split(A_shared_i_j_f, 8)
    s['A_shared'].vectorize(A_shared_i_j_f_i)
    A_shared_i_j_f_o_o, A_shared_i_j_f_o_i = s['A_shared'].split(A_shared_i_j_f_o, 256)
    A_shared_i_j_f_o_i_o, A_shared_i_j_f_o_i_i = s['A_shared'].split(A_shared_i_j_f_o_i, 128)
    s['A_shared'].bind(A_shared_i_j_f_o_i_o, 'threadIdx.y')
    s['A_shared'].bind(A_shared_i_j_f_o_i_i, 'threadIdx.x')
    s['A_shared'].unroll(A_shared_i_j_f_o_o)
    s['A_shared'].pipeline(4, reader_lag=1)
    s['W_shared'].compute_at(s['Y_local'], Y_local_k_o)
    s['W_shared'].storage_swizzle()
    W_shared_i, W_shared_j = s['W_shared'].axis
    W_shared_i_j_f = s['W_shared'].fuse(W_shared_i, W_shared_j)
    W_shared_i_j_f_o, W_shared_i_j_f_i = s['W_shared'].split(W_shared_i_j_f, 8)
    s['W_shared'].vectorize(W_shared_i_j_f_i)
    W_shared_i_j_f_o_o, W_shared_i_j_f_o_i = s['W_shared'].split(W_shared_i_j_f_o, 256)
    W_shared_i_j_f_o_i_o, W_shared_i_j_f_o_i_i = s['W_shared'].split(W_shared_i_j_f_o_i, 128)
    s['W_shared'].bind(W_shared_i_j_f_o_i_o, 'threadIdx.y')
    s['W_shared'].bind(W_shared_i_j_f_o_i_i, 'threadIdx.x')
    s['W_shared'].unroll(W_shared_i_j_f_o_o)
    s['W_shared'].pipeline(4, reader_lag=1)
    s['Y_local'].tensorize(Y_local_k_i_i, 'wgmma_m64n256k16')
