"""The instruction mix of a schedule's hottest loop in SASS, no GPU needed.

    python benchmarks/sass_mix.py [--example gemm_bf16] [--shape 4096,4096,4096]
                                  [--tiles "BM=128, BN=128, BK=32, WM=64, WN=64, stages=3"]
                                  [--no-fragments]

Builds the example's schedule (or ``mma_warp_tiles`` with ``--tiles``), compiles it to
PTX for sm_90a, assembles it with ``ptxas`` and disassembles the cubin with ``nvdisasm``
(on the PATH, or ``$NVDISASM``; the ``nvidia-cuda-nvdisasm`` wheel has one). It prints
ptxas's registers and, for the whole kernel and for its largest loop (a backward branch's
body: the k step), the count of each opcode: mma (HMMA), shared loads (LDS, LDSM), the
cp.async copies (LDGSTS), integer address arithmetic. ``--no-fragments`` lowers without
the ldmatrix pass (``tcomp.lower.fragments``), to compare.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))


def instruction_mix(cubin: str, nvdisasm: str) -> tuple:
    """(every instruction's opcode, the opcodes of the largest loop body)."""
    text = subprocess.run([nvdisasm, "-c", cubin], capture_output=True, text=True, check=True).stdout
    labels, opcodes, branches = {}, [], []
    for line in text.splitlines():
        label = re.match(r"^\s*\.(L_x_\d+):", line)
        if label:
            labels[label.group(1)] = len(opcodes)
            continue
        instruction = re.match(r"^\s*/\*[0-9a-f]+\*/\s+(.*?);", line)
        if instruction:
            body = re.sub(r"^@!?U?P\w+\s+", "", instruction.group(1))
            opcodes.append(body.split()[0].split(".")[0])
            target = re.search(r"BRA\b.*?\.(L_x_\d+)", body)
            if target:
                branches.append((len(opcodes) - 1, target.group(1)))
    loops = [opcodes[labels[t]:n + 1] for n, t in branches if t in labels and labels[t] < n]
    return opcodes, max(loops, key=len, default=[])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--example", default="gemm_bf16", help="a file of examples/ (without .py)")
    parser.add_argument("--shape", default=None, help="M,N,K (default: the example's own)")
    parser.add_argument("--tiles", default=None, help="mma_warp_tiles keywords instead of the example's schedule")
    parser.add_argument("--no-fragments", action="store_true", help="lower without tcomp.lower.fragments")
    args = parser.parse_args(argv)
    nvdisasm = os.environ.get("NVDISASM") or shutil.which("nvdisasm")
    if nvdisasm is None or shutil.which("ptxas") is None:
        print("needs ptxas and nvdisasm on the PATH (or $NVDISASM)", file=sys.stderr)
        return 2

    import importlib

    from numba import cuda

    import tcomp as tc
    from tcomp.codegen.cuda_source import kernel_signature, program_source
    from tcomp.codegen.runtime import import_source
    from tcomp.lower import lower
    from tcomp.lower.passes import KERNEL_PASSES

    example = importlib.import_module(args.example)
    shape = {}
    if args.shape:
        shape = dict(zip(("M", "N", "K"), (int(x) for x in args.shape.split(","))))
    out = example.algorithm(**shape)
    s = tc.create_schedule(out)
    if args.tiles:
        tiles = eval(f"dict({args.tiles})")  # NOTE: a developer's command line
        product = s[out].op.reduce_axis and out.name or "C"
        example.mma_warp_tiles(s, out, product, "A", "W", **tiles)
    else:
        example.schedule(s, out)
    passes = tuple(p for p in KERNEL_PASSES if not (args.no_fragments and p[0] == "load_fragments"))
    program = lower(s, passes=passes)
    module, _ = import_source(program_source(program, simulator=False))
    for kernel in program.kernels:
        ptx, _ = cuda.compile_ptx(getattr(module, kernel.name).py_func, kernel_signature(kernel), cc=(9, 0, "a"))
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "k.ptx")
            with open(path, "w") as f:
                f.write(ptx)
            report = subprocess.run(["ptxas", "-arch=sm_90a", "-v", path, "-o", os.path.join(tmp, "k.cubin")],
                                    capture_output=True, text=True, check=True).stderr
            opcodes, loop = instruction_mix(os.path.join(tmp, "k.cubin"), nvdisasm)
        registers = re.search(r"Used (\d+) registers", report)
        print(f"kernel {kernel.name}: {registers.group(1) if registers else '?'} registers")
        for name, part in (("whole kernel", opcodes), ("largest loop", loop)):
            mix = ", ".join(f"{op} {n}" for op, n in collections.Counter(part).most_common(14))
            print(f"  {name}: {len(part)} instructions: {mix}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
