"""The table of scalar functions (``tcomp.ir.functions``): every entry complete, and the
code generator (in the simulator), ``tc.evaluate`` and a float64 reference agree on
each function."""

import inspect
import math
import string

import numpy as np
import pytest

import tcomp as tc
from tcomp.codegen.cuda_source import program_source
from tcomp.cost.analysis import analyze_kernel
from tcomp.ir.functions import SCALAR_FUNCTIONS, scalar_function
from workloads import check_float, run

#: float64 definitions written from the math, independent of the table's references
FLOAT64_DEFINITIONS = {
    "exp": np.exp,
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "silu": lambda x: x / (1.0 + np.exp(-x)),
    "abs": np.abs,
    "round": np.rint,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "tanh": np.tanh,
    "erf": np.vectorize(math.erf),
    "log": np.log,
}

#: where each function's test inputs are drawn (the others: -6 to 6)
DOMAINS = {"sqrt": (0.0, 40.0), "rsqrt": (0.01, 40.0), "log": (0.001, 400.0)}


def test_every_function_has_a_float64_definition_here():
    assert set(FLOAT64_DEFINITIONS) == set(SCALAR_FUNCTIONS)


@pytest.mark.parametrize("name", sorted(SCALAR_FUNCTIONS))
def test_every_entry_has_every_part(name):
    fn = SCALAR_FUNCTIONS[name]
    assert fn.name == name
    assert fn.arity >= 1
    assert fn.doc.strip()
    assert callable(fn.reference)
    assert fn.instructions >= 1
    fields = {field for _, field, _, _ in string.Formatter().parse(fn.device) if field is not None}
    assert fields == {str(i) for i in range(fn.arity)}, "device code names each operand once"
    if fn.helper:
        assert f"def _{name}(" in fn.helper.format(inline="")


@pytest.mark.parametrize("name", sorted(SCALAR_FUNCTIONS))
def test_every_entry_is_a_public_function(name):
    public = getattr(tc, name)
    assert public.__doc__ and SCALAR_FUNCTIONS[name].doc in public.__doc__
    assert len(inspect.signature(public).parameters) == SCALAR_FUNCTIONS[name].arity


def test_an_unknown_name_says_what_there_is():
    with pytest.raises(KeyError, match="no scalar function 'gelu'; there are exp"):
        scalar_function("gelu")


def _unary(name, n=23):
    X = tc.placeholder((n,), "float32", name="X")
    O = tc.compute((n,), lambda i: getattr(tc, name)(X[i]), name="O")
    return X, O


@pytest.mark.parametrize("name", sorted(SCALAR_FUNCTIONS))
def test_the_cost_model_charges_the_tables_count(name):
    X, O = _unary(name)
    plain = tc.compute((23,), lambda i: X[i], name="O")
    charged = analyze_kernel(tc.lower(tc.create_schedule(O)).kernels[0]).thread_instructions
    base = analyze_kernel(tc.lower(tc.create_schedule(plain)).kernels[0]).thread_instructions
    assert charged - base == pytest.approx(23 * SCALAR_FUNCTIONS[name].instructions)


@pytest.mark.parametrize("name", sorted(SCALAR_FUNCTIONS))
def test_generated_code_evaluate_and_float64_agree(name, rng):
    X, O = _unary(name)
    x = rng.uniform(*DOMAINS.get(name, (-6.0, 6.0)), size=23).astype(np.float32)
    if name not in DOMAINS:
        x[:3] = [0.5, -2.5, 0.0]  # ties of round half to even
    s = tc.create_schedule(O)
    assert SCALAR_FUNCTIONS[name].device_code("x").split("(")[0] in program_source(tc.lower(s), simulator=True)
    want = FLOAT64_DEFINITIONS[name](x.astype(np.float64))
    evaluated = tc.evaluate(O, {X: x})
    check_float(evaluated, want, rtol=2e-6, atol=1e-6)
    check_float(run(s, [x]), want, rtol=2e-6, atol=1e-6)


def test_the_language_reference_lists_every_function():
    from pathlib import Path

    reference = (Path(__file__).resolve().parents[2] / "docs" / "language.md").read_text()
    rows = {line.split("`")[1].split("(")[0]: line for line in reference.splitlines() if line.startswith("| `tc.")}
    for name, fn in SCALAR_FUNCTIONS.items():
        assert f"tc.{name}" in rows, f"docs/language.md has no row for tc.{name}"
        assert rows[f"tc.{name}"].rstrip().endswith(f"| {fn.instructions} |"), rows[f"tc.{name}"]


#: ulp from the correctly rounded float32 value that the GPU may be (the CUDA Math API's
#: bounds for the functions the generated code calls; each entry's doc says the same)
DEVICE_ULPS = {"sqrt": 0, "rsqrt": 2, "tanh": 2, "erf": 2, "log": 1, "exp": 2, "sigmoid": 4, "silu": 4}
#: where a function's ulp bound ends, and the absolute error it keeps below (silu: exp(x) is
#: subnormal below -87, and |silu(x)| < 1e-36)
ULP_BOUND_FROM = {"silu": (-87.0, 1e-42)}

_ASSEMBLE = """
import json
import tcomp as tc
from tcomp.codegen.ptx import ptx_report
from tcomp.lower import lower
out = {}
for name in %r:
    X = tc.placeholder((1024,), "float32", name="X")
    O = tc.compute((1024,), lambda i: getattr(tc, name)(X[i]), name="O")
    s = tc.create_schedule(O)
    b, t = s[O].split(O.op.axis[0], 128)
    s[O].bind(b, "blockIdx.x")
    s[O].bind(t, "threadIdx.x")
    (r,) = ptx_report(lower(s))
    out[name] = dict(spills=r.spill_stores + r.spill_loads, sqrt_rn="sqrt.rn.f32" in r.ptx,
                     rsqrt="rsqrt.approx.f32" in r.ptx)
print(json.dumps(out))
""" % (sorted(DEVICE_ULPS),)


@pytest.mark.skipif(__import__("shutil").which("ptxas") is None, reason="needs CUDA's ptxas on the PATH")
def test_the_new_functions_assemble_for_the_h200():
    """sqrt, rsqrt, tanh, erf and log compile for sm_90a without spills: sqrt as the
    correctly rounded ``sqrt.rn.f32``, rsqrt through the special-function unit."""
    from workloads import json_from_a_process_without_the_simulator

    report = json_from_a_process_without_the_simulator(["-c", _ASSEMBLE])
    assert set(report) == set(DEVICE_ULPS)
    assert all(r["spills"] == 0 for r in report.values())
    assert report["sqrt"]["sqrt_rn"] and report["rsqrt"]["rsqrt"]


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(DEVICE_ULPS))
def test_the_device_is_within_the_documented_ulps(name, rng):
    """On the GPU, 100,000 values across the function's domain: each result within
    ``DEVICE_ULPS[name]`` float32 ulp of the float64 value rounded to float32 (where
    ``ULP_BOUND_FROM`` ends the bound, within its absolute error below)."""
    X, O = _unary(name, n=100_000)
    low, high = DOMAINS.get(name, (-6.0, 6.0))
    x = np.concatenate([rng.uniform(low, high, 99_000), np.exp(rng.uniform(-20, 5, 1_000)) * (low >= 0 or -1)])
    x = x.astype(np.float32)
    got = run(tc.create_schedule(O), [x])
    with np.errstate(over="ignore"):
        want = FLOAT64_DEFINITIONS[name](x.astype(np.float64)).astype(np.float32)
    error = np.abs(got.astype(np.float64) - want)
    start, absolute = ULP_BOUND_FROM.get(name, (-np.inf, 0.0))
    ulps = error[x > start] / np.spacing(np.abs(want[x > start])).astype(np.float64)
    assert np.nanmax(ulps) <= DEVICE_ULPS[name], (name, float(np.nanmax(ulps)))
    assert np.all(error[x <= start] <= absolute), (name, float(np.max(error[x <= start], initial=0.0)))
