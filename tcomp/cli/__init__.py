"""The ``tcomp`` command line.

    tcomp demo  [--shape M=32,N=32,K=16]            matmul + SiLU + int8 quantization, end to end
    tcomp autoschedule FILE [--shape ..] [--trials N] [--out PATH] [--db PATH] [--target NAME]
                       [--model-only] [--workers N] [--timeout S] [--seed N]   search for a schedule
    tcomp check FILE [--schedule PATH] [--shape ..]  is the schedule legal?
    tcomp bench FILE [--schedule PATH] [--shape ..] [--repeat N]   time it on the GPU
    tcomp explain FILE [--schedule PATH] [--shape ..] [--target NAME]  the cost model's account of it

Exit status: 0 success; 1 the answer is "no" (an illegal schedule, results that differ
from the reference); 2 a user error (a file that is missing or defines no
``algorithm``, a bad option, no GPU for ``bench``): one message, no traceback.

One module per command (``demo``, ``autoschedule``, ``check``, ``bench``, ``explain``), each with its
``add_parser`` and ``run``; ``common`` holds what they share.

NOTE: nothing here imports numba (or tcomp, which may) at module level: ``tcomp demo``
must be able to set ``NUMBA_ENABLE_CUDASIM=1`` before numba reads its configuration.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import warnings

from . import autoschedule, bench, check, demo, explain


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tcomp",
        description="tcomp: a schedule-based tensor compiler generating Numba CUDA kernels.",
        epilog="Exit status: 0 success, 1 an illegal schedule or a wrong result, 2 a usage error.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    for command in (demo, autoschedule, check, bench, explain):
        command.add_parser(sub)
    return parser


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("tcomp")
    except Exception:
        return "(not installed)"


@contextlib.contextmanager
def _tcomp_warnings_on_stderr(command: str):
    """Show tcomp's own warnings (a workload without a schedule, a corrupt tuning
    database line) as one ``tcomp COMMAND: warning: ...`` line on stderr, without the
    source line that Python's default display adds; other warnings as usual."""
    with warnings.catch_warnings():
        shown = warnings.showwarning

        def show(message, category, filename, lineno, file=None, line=None):
            if category.__module__.split(".")[0] != "tcomp":
                return shown(message, category, filename, lineno, file, line)
            lead = "\n" if command == "demo" else ""  # NOTE: a demo progress line ends in "..." until done
            print(f"{lead}tcomp {command}: warning: {message}", file=sys.stderr, flush=True)

        warnings.showwarning = show
        yield


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return 2
    if hasattr(args, "target") and args.target is None:
        from .common import machine_target

        args.target = machine_target()
    from ..errors import TcompError

    # NOTE: the demo's tiny grids make numba warn about occupancy in the middle of a
    # progress line; that is expected here and says nothing about the schedule.
    warnings.filterwarnings("ignore", message=r"(?s).*will likely result in GPU under-utilization")
    try:
        with _tcomp_warnings_on_stderr(args.command):
            return args.func(args)
    except TcompError as err:
        print(f"\ntcomp {args.command}: error: {err}" if args.command == "demo" else
              f"tcomp {args.command}: error: {err}", file=sys.stderr, flush=True)
        return 2
    except KeyboardInterrupt:
        print(f"tcomp {args.command}: interrupted", file=sys.stderr)
        return 130

