"""The oracle: one schedule held to ``tc.evaluate`` through ``tc.check``, ``tc.build``
and runs in the instrumented simulator.

- ``tc.check`` says legal: the built module must compute ``tc.evaluate``'s result
  (float tolerance; int8 exactly unless the check reports a reassociation), with
  blocks and threads isolated, then preempted;
- ``tc.check`` raises ``tc.IllegalScheduleError``: built with ``check=False``, the
  module must compute something else on at least one of a few random inputs, unless
  the error says that a later recomputation hides the violation
  (:func:`is_hidden_by_recomputation`; counted apart);
- a ``tc.TcompError`` from the check is a clean rejection; one from the build of a
  schedule the check calls legal is a failure.

:func:`evaluate_schedule` returns the :class:`Outcome` or raises :class:`FuzzFailure`;
a case of a known bug (:mod:`tcomp.testing.known_issues`) counts as "known".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import tcomp as tc
from tcomp.dtypes import host_dtype
from tcomp.errors import TcompError
from tcomp.testing.fuzz_workloads import FuzzWorkload
from tcomp.testing.known_issues import known_issue
from tcomp.testing.simulator_chaos import poison_value, simulator_chaos

#: launches larger than this many threads (grid x block, summed over kernels) are not
#: run in the simulator (about 4,000 threads a second); counted as skipped
MAX_SIMULATED_THREADS = 4096

#: how many random inputs an illegal schedule gets to show a wrong result: the first run
#: in the simulator's (shuffled) order, the second isolated, the others preempted
ILLEGAL_RUNS = 5


def launch_threads(program) -> int:
    """Threads the program launches in all (grid x block, summed over its kernels)."""
    return sum(int(np.prod(k.grid)) * int(np.prod(k.block)) for k in program.kernels)


def _output_array(tensor, avoid) -> np.ndarray:
    host = host_dtype(tensor.dtype)
    if tensor.dtype in ("int8", "int32"):
        present = set(np.unique(avoid).tolist())
        sentinel = next(v for v in [-77] + list(range(-128, 128)) if v not in present)
        return np.full(tensor.shape, sentinel, dtype=host)
    return np.full(tensor.shape, np.nan, dtype=np.float32).astype(host)


def run_module(mod, wl: FuzzWorkload, arrays, want) -> np.ndarray:
    """Call ``mod`` on ``arrays`` with a poisoned output and poisoned intermediates."""
    for arr in mod._intermediate_arrays().values():
        arr.copy_to_device(np.full(arr.shape, poison_value(arr.dtype), dtype=arr.dtype))
    out = _output_array(wl.out, want)
    mod(*arrays, out)
    return out


def matches(got, want, dtype: str, loose: bool, reduction_length: int = 1) -> bool:
    """``got`` is ``tc.evaluate``'s ``want``: exactly for integers (off by one in a few
    elements when ``loose``: a reassociated sum may round across a .5 boundary), within
    a float tolerance otherwise (wider when ``loose``)."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return False
    if dtype in ("int8", "int32"):
        diff = np.abs(got.astype(np.int64) - want.astype(np.int64))
        if not loose:
            return not diff.any()
        return diff.max(initial=0) <= 1 and np.count_nonzero(diff) <= max(2, diff.size // 16)
    g, w = got.astype(np.float64), want.astype(np.float64)
    if not np.isfinite(g[np.isfinite(w)]).all():
        return False
    rtol, atol = (1e-4, 1e-5 * reduction_length) if loose else (1e-5, 1e-5)
    if dtype in ("bfloat16", "float16", "float8_e4m3"):
        rtol, atol = 1e-2, 1e-2
    return bool(np.allclose(g, w, rtol=rtol, atol=atol, equal_nan=True))


def is_hidden_by_recomputation(err) -> bool:
    """Does this ``tc.IllegalScheduleError`` say that a later recomputation hides the
    violation (an epilogue placed inside a reduction loop: every wrong value is
    computed again, right, before anything reads it)?

    The polyhedral checker (``tcomp.poly.legality``) attaches the violation, whose
    ``hidden`` text is non-empty for this kind, and its message says "the final result
    happens to match"; older checkers only have the message.
    """
    violation = getattr(err, "violation", None)
    if violation is not None and hasattr(violation, "hidden"):
        return bool(violation.hidden)
    text = str(err).lower()
    return "happens to match" in text or "recomput" in text


class FuzzFailure(AssertionError):
    """A schedule that the checker or the code generator gets wrong."""


@dataclass(frozen=True)
class Outcome:
    """What one schedule did: ``category`` is legal, illegal, hidden (illegal, hidden by
    a later recomputation), rejected (a ``tc.TcompError`` from a primitive, the check
    or the build) or skipped (too many threads for the simulator)."""

    category: str
    reason: str = ""

    def __str__(self) -> str:
        return f"{self.category}: {self.reason}" if self.reason else self.category


def evaluate_schedule(wl: FuzzWorkload, s, seed: int = 0, repro: str = "", known: bool = True) -> Outcome:
    """Check ``s``, build it, run it and compare with ``tc.evaluate``; return the
    :class:`Outcome` or raise :class:`FuzzFailure` (an exception that is not a
    ``tc.TcompError`` passes through). With ``known=False`` a case of a known bug
    (:data:`KNOWN_ISSUES`) fails too instead of counting as "known"."""
    rng = np.random.default_rng(seed)
    suffix = f"\n\nreproducer:\n{repro}" if repro else ""
    try:
        report = tc.check(s)
    except tc.IllegalScheduleError as err:
        return _illegal(wl, s, err, rng, seed, suffix, known)
    except TcompError as err:
        return Outcome("rejected", f"{type(err).__name__} from tc.check")
    try:
        mod = tc.build(s, check=False)
    except TcompError as err:
        # NOTE: tc.check lowers and generates code too: a schedule it calls legal must build
        raise FuzzFailure(f"{wl.name} {wl.shape}: tc.check says legal, but tc.build refuses it: "
                          f"{type(err).__name__}: {err}{suffix}") from err
    if launch_threads(mod.program) > MAX_SIMULATED_THREADS and mod.simulator:
        return Outcome("skipped", "too many threads for the simulator")
    reassociated = bool(getattr(report, "reassociations", ()))
    arrays = wl.make_inputs(rng)
    want = tc.evaluate(wl.out, wl.feeds(arrays))
    # isolated (a read of what another thread or block writes), then preempted (a
    # read-modify-write that several repeat)
    for how in ("isolated", "preempted"):
        chaos = {"isolate_blocks": True, "isolate_threads": True} if how == "isolated" else {"preempt": True}
        with simulator_chaos(seed, **chaos):
            got = run_module(mod, wl, arrays, want)
        if matches(got, want, wl.out.dtype, reassociated, wl.reduction_length):
            continue
        issue = known_issue("wrong result", wl, s, report, mod) if known else ""
        if issue:
            return Outcome("known", issue)
        raise FuzzFailure(
            f"{wl.name} {wl.shape}: tc.check says legal{' (reassociating)' if reassociated else ''}, "
            f"but the result differs from tc.evaluate (blocks and threads {how})\n{_diff(got, want)}"
            f"\n\ncheck report:\n{report}\n\ngenerated source: {mod.source_path}{suffix}")
    return Outcome("legal", "reassociates" if reassociated else "")


def _illegal(wl, s, err, rng, seed, suffix, known=True) -> Outcome:
    hidden = is_hidden_by_recomputation(err)
    kind = getattr(getattr(err, "violation", None), "kind", "illegal")
    try:
        mod = tc.build(s, check=False)
    except TcompError as build_err:
        return Outcome("hidden" if hidden else "illegal",
                       f"{kind}; lowering refuses it too ({type(build_err).__name__})")
    if launch_threads(mod.program) > MAX_SIMULATED_THREADS and mod.simulator:
        return Outcome("skipped", "too many threads for the simulator")
    differs, how = False, ""
    for attempt in range(ILLEGAL_RUNS):
        arrays = wl.make_inputs(rng)
        want = tc.evaluate(wl.out, wl.feeds(arrays))
        try:
            # the simulator's own order (shuffled); then blocks and threads isolated; then
            # every thread of the launch preempted at random memory accesses (a lost update
            # may change a quantized result by one only: more than one interleaving)
            with simulator_chaos(seed * 1000 + attempt, isolate_blocks=attempt == 1,
                                 isolate_threads=attempt == 1, preempt=attempt >= 2):
                got = run_module(mod, wl, arrays, want)
        except TcompError:
            raise
        except Exception as run_err:  # noqa: BLE001 - the simulator's bounds check, for one
            differs, how = True, f"crashed when run ({type(run_err).__name__})"
            break
        if not matches(got, want, wl.out.dtype, True, wl.reduction_length):
            differs, how = True, "computes something else"
            break
    if not differs:
        issue = known_issue("false positive", wl, s, err, mod) if known else ""
        if issue:
            return Outcome("known", issue)
    if hidden:
        if differs:
            raise FuzzFailure(f"{wl.name} {wl.shape}: tc.check says the violation is hidden by a later "
                              f"recomputation, but built with check=False the result {how}\n\n{err}{suffix}")
        return Outcome("hidden", kind)
    if not differs:
        raise FuzzFailure(f"{wl.name} {wl.shape}: checker false positive: tc.check rejects the schedule, "
                          f"but built with check=False it matches tc.evaluate on {ILLEGAL_RUNS} random "
                          f"inputs (blocks and threads shuffled; blocks and threads isolated; threads "
                          f"preempted, {ILLEGAL_RUNS - 2} times)"
                          f"\n\n{err}{suffix}")
    return Outcome("illegal", f"{kind}; {how}")


def _diff(got, want) -> str:
    got, want = np.asarray(got), np.asarray(want)
    if got.dtype.kind in "iu":
        bad = got.astype(np.int64) != want.astype(np.int64)
    else:
        g, w = got.astype(np.float64), want.astype(np.float64)
        bad = ~np.isclose(g, w, rtol=1e-5, atol=1e-5, equal_nan=True)
    n = int(np.count_nonzero(bad))
    if not n:
        return "(no element differs by more than 1e-5)"
    first = tuple(int(x) for x in np.argwhere(bad)[0])
    return (f"{n} of {bad.size} elements differ; first at {first}: got {got[first]!r}, "
            f"want {want[first]!r}")
