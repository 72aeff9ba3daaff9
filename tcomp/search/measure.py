"""Measuring candidates in a process of their own: validated, then timed.

A search first writes a **bench** folder (:func:`prepare_bench`): the algorithm (pickled),
seeded random inputs (never zeros) and the reference outputs, computed once per search
with ``tc.evaluate`` (float32 matrix products in float64). Then :func:`measure_batch`
starts ``python -m tcomp.search.measure BENCH`` and hands it schedules one at a time, each
with a timeout. For each one the child replays the schedule, builds it (``tc.build``
checks legality first), runs it into outputs poisoned with NaN (an integer sentinel for
integer outputs), compares every output with the reference, and only then, on a GPU,
times it with CUDA events after warm-up: the median of the repeats and their spread.
Each repeat times enough calls for about a millisecond of work, replayed from one CUDA
graph (``tc.graph``), so that a short kernel's time is the kernel's and not the host's
launch cost (torch's matmul baseline: launched back to back). The inputs are
rotated between copies that together exceed twice the L2 cache, call by call, so that a
small problem is not timed from a warm cache.

Whatever happens to a candidate is a status and the batch goes on: ``ok``; ``wrong`` (an
output differs from the reference); ``illegal`` (``tc.check`` refuses it); ``over
capacity``; ``crash`` (an exception, an illegal address, a killed process: the error
text is the end of what it printed); ``timeout``. After any status but ``ok`` the child
is replaced by a fresh one (a fresh CUDA context) before the next candidate.

``measure_batch`` is a plain function of picklable arguments, so that a
``concurrent.futures`` executor (threads, a local process pool, or a cluster's such as
Dask's, given a shared folder) can run batches on several GPUs. The environment variable
``TCOMP_MEASURE_FAULT`` (``crash``, ``hang``, ``wrong`` or ``driver``, optionally ``:TEXT``
to hit only the sources that contain TEXT) makes the child fail on purpose, so that tests
can check that each case is recorded and the candidates after it are still measured;
``driver`` makes its build fail as a refused driver call does (a ``tc.DriverError``: a
crash, not an illegal schedule). ``TCOMP_MEASURE_STANDIN=1`` gives a candidate validated
in the simulator a stand-in time (:func:`standin_timing`), so that tests run the measured
search, here or on a cluster, without a GPU.
"""

from __future__ import annotations

import json
import os
import pickle
import selectors
import subprocess
import sys
import time
from dataclasses import dataclass

#: how much of a failed child's output an error record keeps
ERROR_CHARS = 2000
#: at most this many calls go between two CUDA events of one timing (see ``_Child._time``)
CALLS_PER_TIMING = 50
#: the prefix of the child's answer lines (anything else it prints is its log)
ANSWER = "@tcomp-measure "
#: a baseline the child can time instead of a schedule: torch.matmul of the two inputs
TORCH_MATMUL = "torch.matmul"


@dataclass(frozen=True)
class Measurement:
    """How one candidate ended in the runner."""

    source: str
    status: str
    measured: float | None = None  # median seconds
    spread: float | None = None  # (slowest - fastest) / median of the repeats
    times: tuple = ()  # every repeat, seconds
    error: str = ""


# ---------------------------------------------------------------------- the bench


def prepare_bench(out, folder, seed: int = 0) -> str:
    """Write the algorithm of ``out``, random inputs and the reference outputs into
    ``folder`` (created); return its path."""
    import numpy as np

    from ..lang.evaluate import evaluate, inputs
    from ..schedule import create_schedule
    from ..validation import random_inputs

    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "algorithm.pickle"), "wb") as f:
        pickle.dump(out, f)
    s = create_schedule(out)
    feeds = random_inputs(s, seed=seed)
    for n, t in enumerate(inputs(out)):  # the module's argument order
        np.save(os.path.join(folder, f"input{n}.npy"), _storage(feeds[t], t.dtype))
    for n, t in enumerate(s.outputs):
        np.save(os.path.join(folder, f"reference{n}.npy"), _storage(evaluate(t, feeds), t.dtype))
    return os.fspath(folder)


def _storage(array, dtype: str):
    """``array`` as numpy can save it: 16- and 8-bit floats as their unsigned-integer bits
    (``numpy.save`` does not keep ml_dtypes' types)."""
    from ..dtypes import DEVICE_STORAGE

    return array.view(DEVICE_STORAGE[dtype]) if dtype in DEVICE_STORAGE else array


def load_array(path, dtype: str):
    """An array that :func:`prepare_bench` saved, with its tcomp ``dtype`` restored."""
    import numpy as np

    from ..dtypes import host_dtype

    return np.load(path).view(host_dtype(dtype))


def measure_batch(bench: str, sources: list, *, timeout: float = 120.0, repeats: int = 10, warmup: int = 3,
                  gpu: int | None = None, checked: bool = False) -> list:
    """Validate and time each schedule source of ``sources`` (see the module docstring);
    one :class:`Measurement` per source, in order. ``gpu`` picks the device for the
    child: the ``gpu``-th of the devices this process sees (``CUDA_VISIBLE_DEVICES``, if
    set, is respected), modulo their number, so that several workers can share one GPU.
    ``checked`` says that ``tc.check`` has
    passed every source already (the search's filters), so the child builds without
    checking again; the result is still compared with the reference."""
    runner = _Runner(bench, gpu)
    try:
        return [runner.measure(src, timeout, repeats, warmup, checked) for src in sources]
    finally:
        runner.close()


def prebuild(bench: str, source: str, checked: bool = False) -> str:
    """Build ``source`` into the kernel cache ahead of its measurement (run in the build
    pool while the GPU measures others); returns "" or why it did not build (the runner
    then records the failure itself)."""
    from ..build import build
    from ..schedule.schedule import replay

    with open(os.path.join(bench, "algorithm.pickle"), "rb") as f:
        out = pickle.load(f)
    try:
        build(replay(source, out), check=not checked)
    except Exception as err:  # NOTE: recorded when the runner meets it
        return f"{type(err).__name__}: {err}"
    return ""


def standin_timing() -> bool:
    """Do the tests ask for a stand-in clock (``TCOMP_MEASURE_STANDIN=1``)? Then a
    candidate validated in the simulator is given a time made from its source's hash
    (1 to 2 ms, the same on every machine), so that the measured search, locally or on a
    cluster, runs end to end without a GPU. Nothing else reads it."""
    return os.environ.get("TCOMP_MEASURE_STANDIN", "") not in ("", "0")


def _standin_time(source: str) -> dict:
    import hashlib

    seconds = 1e-3 * (1 + int(hashlib.sha256(source.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF)
    return {"status": "ok", "measured": seconds, "spread": 0.0, "times": [seconds] * 3}


def _simulated_path(bench: str, source: str) -> str:
    import hashlib

    return os.path.join(bench, "simulated", hashlib.sha256(source.encode()).hexdigest()[:32] + ".json")


def _simulated_answer(bench: str, source: str) -> dict | None:
    """The answer a run in the simulator gave for ``source`` with this bench, if any: the
    simulator has no clock (its time is None, or the stand-in's, made from the source), so
    a source it validated is not run again (the final re-measurement asks once a round,
    each round in a fresh runner)."""
    try:
        with open(_simulated_path(bench, source)) as f:
            return json.load(f)
    except FileNotFoundError:
        return None


def _remember_simulated(bench: str, source: str, answer: dict) -> None:
    path = _simulated_path(bench, source)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    partial = f"{path}.{os.getpid()}"
    with open(partial, "w") as f:
        json.dump(answer, f)
    os.replace(partial, path)  # NOTE: whole or absent for a runner reading it at the same time


def worker_device(worker: int, visible: str | None = None, count: int | None = None) -> str:
    """What ``CUDA_VISIBLE_DEVICES`` a measuring worker gets: the ``worker``-th (modulo)
    of the devices this process sees: ``visible`` (default: this process's
    ``CUDA_VISIBLE_DEVICES``) when set, else ``count`` devices (default: numba's count)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES") if visible is None else visible
    if visible is not None and visible.strip():
        devices = [d.strip() for d in visible.split(",") if d.strip()]
    else:
        if count is None:
            from numba import cuda

            count = len(cuda.gpus) if cuda.is_available() else 1
        devices = [str(n) for n in range(max(1, count))]
    return devices[worker % len(devices)]


_TIMED_OUT = object()


class _Runner:
    """One child process at a time, replaced after any candidate that is not ok."""

    def __init__(self, bench: str, gpu: int | None):
        self.bench = bench
        self.env = dict(os.environ)
        if gpu is not None:
            self.env["CUDA_VISIBLE_DEVICES"] = worker_device(gpu)
        self.proc = None
        self.log: list = []

    def _start(self):
        self.log = []
        self.proc = subprocess.Popen([sys.executable, "-m", "tcomp.search.measure", self.bench],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, bufsize=1, env=self.env)

    def close(self):
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            for stream in (self.proc.stdin, self.proc.stdout):
                try:
                    stream.close()
                except OSError:
                    pass
            self.proc = None

    def measure(self, source: str, timeout: float, repeats: int, warmup: int, checked: bool = False) -> Measurement:
        if self.proc is None or self.proc.poll() is not None:
            self.close()
            self._start()
        request = json.dumps({"source": source, "repeats": repeats, "warmup": warmup, "checked": checked})
        try:
            self.proc.stdin.write(request + "\n")
            self.proc.stdin.flush()
        except OSError:
            pass
        answer = self._read_answer(timeout)
        if answer is _TIMED_OUT:
            self.close()
            return Measurement(source, "timeout", error=f"no answer within {timeout:g} s")
        if answer is None:  # the child closed its output: it is exiting
            try:
                code = self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                code = "unknown (it closed its output and did not exit)"
            tail = "".join(self.log)[-ERROR_CHARS:]
            self.close()
            return Measurement(source, "crash", error=f"the measuring process exited with status {code}: {tail}")
        result = Measurement(source, answer["status"], answer.get("measured"), answer.get("spread"),
                             tuple(answer.get("times", ())), answer.get("error", ""))
        if result.status != "ok":
            self.close()
        return result

    def _read_answer(self, timeout: float):
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            while True:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    return _TIMED_OUT
                line = self.proc.stdout.readline()
                if not line:
                    return None
                if line.startswith(ANSWER):
                    return json.loads(line[len(ANSWER):])
                self.log.append(line)


# ---------------------------------------------------------------------- the child


class _Child:
    """Holds the bench (inputs on the device, in rotated copies) and the modules built."""

    def __init__(self, bench: str):
        from ..lang.evaluate import inputs
        from ..schedule import create_schedule

        with open(os.path.join(bench, "algorithm.pickle"), "rb") as f:
            self.out = pickle.load(f)
        s = create_schedule(self.out)
        self.placeholders = inputs(self.out)  # the module's argument order
        self.outputs = list(s.outputs)
        self.inputs = [load_array(os.path.join(bench, f"input{n}.npy"), t.dtype)
                       for n, t in enumerate(self.placeholders)]
        self.references = [load_array(os.path.join(bench, f"reference{n}.npy"), t.dtype)
                           for n, t in enumerate(self.outputs)]
        self.device_inputs = None
        self.bench = bench

    def run(self, request: dict) -> dict:
        if request["source"] == TORCH_MATMUL:
            return self._torch_matmul(request)
        from ..codegen import simulator_enabled

        remembered = _simulated_answer(self.bench, request["source"]) if simulator_enabled() else None
        if remembered is not None:
            return remembered
        from ..build import build
        from ..errors import CapacityError, CodegenError, DriverError, LoweringError, ScheduleError
        from ..schedule.schedule import replay
        from ..validation import compare

        fault, _, marker = os.environ.get("TCOMP_MEASURE_FAULT", "").partition(":")
        if marker and marker not in request["source"]:
            fault = ""
        s = replay(request["source"], self.out)
        try:
            if fault == "driver":
                raise DriverError("cuFuncSetAttribute failed: CUDA_ERROR_INVALID_HANDLE (injected)")
            mod = build(s, check=not request.get("checked", False))
        except CapacityError as err:
            return {"status": "over capacity", "error": str(err)[:ERROR_CHARS]}
        except DriverError as err:  # a legal schedule whose kernel the driver would not load or configure
            return {"status": "crash", "error": f"{type(err).__name__}: {err}"[:ERROR_CHARS]}
        except (ScheduleError, LoweringError, CodegenError) as err:  # refused by tc.check (check = build)
            return {"status": "illegal", "error": f"{type(err).__name__}: {err}"[:ERROR_CHARS]}
        if fault == "crash":
            os._exit(3)
        if fault == "hang":
            time.sleep(3600)
        results = self._run_once(mod)
        if fault == "wrong":
            results[0].reshape(-1)[::2] += 3  # half the elements off by 3: beyond any tolerance
        for t, got, ref in zip(self.outputs, results, self.references):
            ok, lines = compare(got, ref, t.dtype)
            if not ok:
                return {"status": "wrong", "error": f"output {t.name}: {'; '.join(lines)}"}
        if mod.simulator:
            answer = _standin_time(request["source"]) if standin_timing() else {"status": "ok", "measured": None,
                                                                                 "spread": None}
            _remember_simulated(self.bench, request["source"], answer)
            return answer
        copies = self._device_copies()
        return self._time(lambda n, outs: mod(*copies[n], *outs), request, replayed=True)

    def _run_once(self, mod) -> list:
        import numpy as np

        from ..dtypes import DEVICE_STORAGE, host_dtype, is_float

        poisoned = [np.full(t.shape, np.nan if is_float(t.dtype) else -77, dtype=host_dtype(t.dtype))
                    for t in self.outputs]
        if mod.simulator:
            mod(*self.inputs, *poisoned)
            return poisoned
        from numba import cuda

        d_out = [cuda.to_device(p.view(DEVICE_STORAGE[t.dtype]) if t.dtype in DEVICE_STORAGE else p)
                 for t, p in zip(self.outputs, poisoned)]
        mod(*self._device_copies()[0], *d_out)
        cuda.synchronize()
        return [d.copy_to_host().view(host_dtype(t.dtype)) for t, d in zip(self.outputs, d_out)]

    def _device_copies(self) -> list:
        """Copies of the inputs on the device, as many as it takes to exceed twice the L2."""
        if self.device_inputs is None:
            from numba import cuda

            from ..dtypes import DEVICE_STORAGE

            device = cuda.get_current_device()
            l2 = getattr(device, "L2_CACHE_SIZE", 50 * 2**20)
            nbytes = max(1, sum(a.nbytes for a in self.inputs))
            copies = max(1, min(8, -(-2 * l2 // nbytes)))
            views = [a.view(DEVICE_STORAGE[t.dtype]) if t.dtype in DEVICE_STORAGE else a
                     for t, a in zip(self.placeholders, self.inputs)]
            self.device_inputs = [[cuda.to_device(v) for v in views] for _ in range(copies)]
        return self.device_inputs

    def _time(self, launch, request: dict, replayed: bool = False) -> dict:
        """Median seconds a call of ``launch(copy, outputs)``; with ``replayed`` (tcomp
        modules) each repeat replays one CUDA graph of the calls instead of launching them."""
        import numpy as np
        from numba import cuda

        from ..codegen.graph import graph
        from ..dtypes import DEVICE_STORAGE, host_dtype

        copies = self._device_copies()
        outs = [cuda.device_array(t.shape, dtype=DEVICE_STORAGE.get(t.dtype, host_dtype(t.dtype)))
                for t in self.outputs]
        for n in range(request["warmup"]):
            launch(n % len(copies), outs)
        cuda.synchronize()
        start, end = cuda.event(), cuda.event()
        start.record()
        launch(0, outs)
        end.record()
        end.synchronize()
        # NOTE: each timing covers enough calls, issued back to back, for about a
        # millisecond of work, so that the host's cost of a launch (a few µs for tcomp,
        # more for torch or Triton) hides behind the kernels before it
        calls = max(1, min(CALLS_PER_TIMING, round(1e-3 / max(cuda.event_elapsed_time(start, end) / 1e3, 1e-7))))
        # NOTE: a tcomp module's launch costs the host about 10 µs, as long as a short
        # kernel (LayerNorm at 1024 x 4096 takes 12 µs): launched back to back, such a
        # kernel timed 12-16 µs from one measurement to the next (H100). Replayed from a
        # graph, the calls go without the host between them
        replay = graph(lambda: [launch(c % len(copies), outs) for c in range(calls)]).replay if replayed else None
        times = []
        for n in range(request["repeats"]):
            start.record()
            if replay is not None:
                replay()
            else:
                for c in range(calls):
                    launch((n * calls + c) % len(copies), outs)
            end.record()
            end.synchronize()
            times.append(cuda.event_elapsed_time(start, end) / 1e3 / calls)
        median = float(np.median(times))
        return {"status": "ok", "measured": median, "times": times,
                "spread": float((max(times) - min(times)) / median) if median > 0 else 0.0}

    def _torch_matmul(self, request: dict) -> dict:
        import torch

        copies = [[torch.as_tensor(a, device="cuda") for a in copy] for copy in self._device_copies()]
        return self._time(lambda n, outs: torch.matmul(*copies[n][:2]), request)


def main() -> int:
    bench = sys.argv[1]
    child = _Child(bench)
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        try:
            answer = child.run(request)
        except Exception as err:  # NOTE: any failure of the candidate is a record, not a crash of the search
            import traceback

            answer = {"status": "crash", "error": "".join(traceback.format_exception(err))[-ERROR_CHARS:]}
        print(ANSWER + json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
