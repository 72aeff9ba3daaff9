"""Row operators in one kernel (issue 32). Each example's hand schedule, which is
``rows_in_blocks``: a block per row, the row staged in shared memory, its statistics in
interleaved slices. The examples are

- RMSNorm (examples/rmsnorm.py, bf16, 1024 x 4096, gamma);
- the row softmax (examples/softmax.py, float32, 4096 x 4096);
- LayerNorm (examples/layernorm.py, bf16, 1024 x 4096, gamma and beta).

Each is measured against PyTorch eager, torch.compile and the device copy of its bytes,
in one run:

    python benchmarks/row_operators.py [--cases rmsnorm,softmax,layernorm] [--no-compile]

"of copy" is the floor over the time. The floor is the operator's bytes (its input read
once, its output written once) at the device-copy bandwidth, and the device-copy
bandwidth is half the time of ``X.clone()``. Outputs are poisoned first, then compared
with a float64 reference; the bf16 outputs must lie within one bf16 rounding of it.
Timing: batched CUDA events (``timing.time_cuda_batched``).
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.append(os.path.dirname(os.path.abspath(__file__)))  # after examples/: names clash
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

from timing import time_cuda_batched  # noqa: E402  (benchmarks/timing.py)


def _cases(torch):
    """name -> (example module, shape, inputs maker, PyTorch function, float64 reference)."""
    import layernorm
    import rmsnorm
    import softmax

    gen = torch.Generator(device="cuda").manual_seed(0)

    def bf16(*shape, scale=1.0, shift=0.0):
        return (torch.randn(*shape, device="cuda", generator=gen) * scale + shift).to(torch.bfloat16)

    def rms(x, g):
        return (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + rmsnorm.EPS) * g.float()).bfloat16()

    def rms64(x, g):
        x = x.double()
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + rmsnorm.EPS) * g.double()

    def ln(x, g, b):
        return torch.nn.functional.layer_norm(x, (x.shape[-1],), g, b, layernorm.EPS)

    def ln64(x, g, b):
        return torch.nn.functional.layer_norm(x.double(), (x.shape[-1],), g.double(), b.double(), layernorm.EPS)

    return {
        "rmsnorm": (rmsnorm, (1024, 4096), lambda: [bf16(1024, 4096, scale=3.0), bf16(4096, scale=0.2, shift=1.0)],
                    rms, rms64),
        "softmax": (softmax, (4096, 4096),
                    lambda: [torch.randn(4096, 4096, device="cuda", generator=gen) * 4.0],
                    lambda x: torch.softmax(x, -1), lambda x: torch.softmax(x.double(), -1)),
        "layernorm": (layernorm, (1024, 4096),
                      lambda: [bf16(1024, 4096, scale=3.0, shift=20.0), bf16(4096, scale=0.2, shift=1.0),
                               bf16(4096)],
                      ln, ln64),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default="rmsnorm,softmax,layernorm", help="comma-separated")
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile baseline")
    args = parser.parse_args(argv)

    import torch

    import tcomp as tc

    cases = _cases(torch)
    wrong = 0
    for name in args.cases.split(","):
        example, (M, N), make, eager, reference = cases[name]
        inputs = make()
        out = example.algorithm(M, N)
        s = tc.create_schedule(out)
        example.schedule(s, out)
        mod = tc.build(s)
        y = torch.full((M, N), float("nan"), dtype=inputs[0].dtype, device="cuda")
        mod(*inputs, y)
        torch.cuda.synchronize()
        want = reference(*inputs)
        bound = 2.0 ** -8 * want.abs() + 1e-6 if y.dtype == torch.bfloat16 else 1e-5 * want.abs() + 1e-7
        bad = int(((y.double() - want).abs() > bound).sum().item()) + int(torch.isnan(y).sum().item())
        wrong += bad
        nbytes = sum(t.numel() * t.element_size() for t in inputs) + y.numel() * y.element_size()
        floor = time_cuda_batched(lambda: inputs[0].clone()) / 2 * nbytes / (inputs[0].numel() *
                                                                          inputs[0].element_size())
        rows = [("tcomp, one kernel", time_cuda_batched(lambda: mod(*inputs, y))),
                ("PyTorch eager", time_cuda_batched(lambda: eager(*inputs)))]
        if not args.no_compile:
            compiled = torch.compile(eager)
            compiled(*inputs)
            rows.append(("torch.compile", time_cuda_batched(lambda: compiled(*inputs))))
        print(f"== {name} {M} x {N}: {nbytes / 1e6:.1f} MB, copy floor {floor * 1e6:.1f} us; "
              f"{bad} tcomp outputs outside the bound")
        for label, t in rows:
            print(f"{label:24s} {t * 1e6:8.1f} us  of copy {floor / t:5.2f}  tcomp / this {rows[0][1] / t:5.2f}",
                  flush=True)
    return 0 if wrong == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
