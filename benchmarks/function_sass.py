"""What a scalar function costs a thread in SASS, no GPU needed.

    NVDISASM=/path/to/nvdisasm python benchmarks/function_sass.py

Each function (the ones of ``tcomp.ir.functions`` and the candidates of the functions to
come) is compiled as the body of a copy kernel, ``o[i] = f(x[i])`` in float32, the way the
generated code calls it (``math.*`` and ``libdevice``, no fast-math), to PTX for sm_90a,
assembled with ``ptxas`` and disassembled with ``nvdisasm`` (on the PATH, or
``$NVDISASM``; the ``nvidia-cuda-nvdisasm`` wheel has one). It prints how many SASS
instructions the call adds to the copy kernel and its special-function-unit instructions
(MUFU). The count is static: it includes slow paths (denormals, huge arguments) that a
typical input never takes, so it bounds what the cost model's ``instructions`` should say
from above.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

#: the body of each probe kernel: the generated code's call of each function
CALLS = {
    "copy": "x[i]",
    "exp": "math.exp(x[i])",
    "sigmoid": "sigmoid(x[i])",
    "silu": "x[i] * sigmoid(x[i])",
    "sigmoid by division (before)": "float32(1.0) / (float32(1.0) + math.exp(-x[i]))",
    "silu by division (before)": "x[i] / (float32(1.0) + math.exp(-x[i]))",
    "round": "libdevice.rintf(x[i])",
    "abs": "abs(x[i])",
    "sqrt": "math.sqrt(x[i])",
    "rsqrt": "libdevice.rsqrtf(x[i])",
    "tanh": "math.tanh(x[i])",
    "erf": "math.erf(x[i])",
    "log": "math.log(x[i])",
}


def sass_opcodes(body: str, nvdisasm: str) -> list:
    """The SASS opcodes (NOPs left out) of a kernel ``o[i] = body`` over float32 arrays."""
    from numba import cuda, float32
    from numba.cuda import libdevice

    from tcomp.codegen.approximate_division import reciprocal

    @cuda.jit(device=True, inline="always")
    def sigmoid(x):  # the generated code's helper (tcomp.ir.functions)
        t = math.exp(-abs(x))
        r = reciprocal(float32(1.0) + t)
        return r if x >= float32(0.0) else t * r

    namespace = {"cuda": cuda, "math": math, "libdevice": libdevice, "float32": float32, "sigmoid": sigmoid}
    exec(f"def probe(o, x):\n    i = cuda.grid(1)\n    if i < x.size:\n        o[i] = {body}\n", namespace)
    ptx, _ = cuda.compile_ptx(namespace["probe"], "void(float32[::1], float32[::1])", cc=(9, 0))
    with tempfile.TemporaryDirectory() as folder:
        with open(os.path.join(folder, "probe.ptx"), "w") as f:
            f.write(ptx)
        cubin = os.path.join(folder, "probe.cubin")
        subprocess.run(["ptxas", "-arch=sm_90a", os.path.join(folder, "probe.ptx"), "-o", cubin], check=True)
        sass = subprocess.run([nvdisasm, "-c", cubin], capture_output=True, text=True, check=True).stdout
    opcodes = re.findall(r"/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", sass)
    return [op for op in opcodes if op != "NOP"]


def main(argv=None) -> int:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args(argv)
    nvdisasm = os.environ.get("NVDISASM") or shutil.which("nvdisasm")
    if nvdisasm is None or shutil.which("ptxas") is None:
        print("needs ptxas and nvdisasm on the PATH (or $NVDISASM)", file=sys.stderr)
        return 2
    from tcomp.ir.functions import SCALAR_FUNCTIONS

    copy = len(sass_opcodes(CALLS["copy"], nvdisasm))
    print("| function | SASS instructions over a copy | MUFU | tcomp's cost table |")
    print("| --- | ---: | --- | ---: |")
    for name, body in CALLS.items():
        if name == "copy":
            continue
        ops = sass_opcodes(body, nvdisasm)
        mufu = ", ".join(op for op in ops if op.startswith("MUFU")) or "-"
        table = SCALAR_FUNCTIONS[name].instructions if name in SCALAR_FUNCTIONS else "-"
        print(f"| {name} | {len(ops) - copy} | {mufu} | {table} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
