"""The kernel cache under parallel builds: several processes building the same and
different kernels at once into one cache directory never corrupt or half-read it, and a
process building a kernel that another one cached loads it instead of compiling.

The generated sources are written to a temporary file and renamed into place
(``runtime.import_source``), and numba-cuda writes its cache files the same way. In the
simulator (CI) the workers build, import and run the kernels there; on a GPU
(gpu-marked test) they compile for real and the second build must hit numba's cache.
"""

import hashlib
import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pytest


def _worker_init(cache_dir: str, simulator: bool) -> None:
    os.environ["TCOMP_CACHE_DIR"] = cache_dir
    if simulator:
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    else:
        os.environ.pop("NUMBA_ENABLE_CUDASIM", None)


def _build_and_run(job):
    """Build ``Y = X * scale + 1`` over (rows, 7), run it on fresh inputs, return (job,
    correct, build seconds, numba cache hits)."""
    rows, scale, seed = job
    import tcomp as tc

    X = tc.placeholder((rows, 7), "float32", name="X")
    Y = tc.compute((rows, 7), lambda i, j: X[i, j] * scale + 1.0, name="Y")
    s = tc.create_schedule(Y)
    i, j = s[Y].axis
    s[Y].bind(i, "blockIdx.x")
    s[Y].bind(j, "threadIdx.x")
    if os.environ.get("NUMBA_ENABLE_CUDASIM", "0") in ("", "0"):
        from numba import cuda

        cuda.current_context()  # NOTE: creating the process's CUDA context is not part of a build
    start = time.perf_counter()
    mod = tc.build(s)
    seconds = time.perf_counter() - start
    x = np.random.default_rng(seed).standard_normal((rows, 7)).astype(np.float32)
    y = np.full((rows, 7), np.nan, np.float32)
    mod(x, y)
    correct = bool(np.allclose(y, x.astype(np.float64) * scale + 1.0, rtol=1e-6, atol=1e-6))
    hits = 0 if mod.simulator else sum(sum(k.stats.cache_hits.values()) for k in mod._kernels)
    return job, correct, seconds, hits


def _parallel_builds(cache_dir: Path, simulator: bool):
    # four builds of one kernel and four of different kernels, at once, in four processes
    jobs = [(3, 2.0, n) for n in range(4)] + [(2 + n, 0.5 * n, 10 + n) for n in range(4)]
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(4, mp_context=context, initializer=_worker_init,
                             initargs=(str(cache_dir), simulator)) as pool:
        results = list(pool.map(_build_and_run, jobs))
    for job, correct, _, _ in results:
        assert correct, job
    kernels = cache_dir / "kernels"
    sources = sorted(kernels.glob("tcomp_kernels_*.py"))
    assert len(sources) == 5  # one kernel four times, four others
    assert not [p for p in kernels.iterdir() if ".tmp" in p.name]  # no half-written file left
    for path in sources:
        text = path.read_text()
        assert path.stem == "tcomp_kernels_" + hashlib.sha256(text.encode()).hexdigest()[:20]  # whole, not torn
        compile(text, str(path), "exec")
    return results


def test_parallel_builds_share_the_cache_in_the_simulator(tmp_path):
    _parallel_builds(tmp_path, simulator=True)


@pytest.mark.gpu
def test_parallel_builds_on_the_gpu_and_a_second_process_hits_the_cache(tmp_path):
    _parallel_builds(tmp_path, simulator=False)
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=context, initializer=_worker_init,
                             initargs=(str(tmp_path), False)) as pool:
        (_, correct, seconds, hits), = pool.map(_build_and_run, [(3, 2.0, 99)])
    assert correct
    assert hits == 1  # loaded from the cache, not compiled
    print(f"build of a cached kernel in a fresh process: {seconds:.3f} s")
    assert seconds < 1.0
