"""A tensor may take any name, the generated module's own names included: its kernels'
variables never take a name the module binds (its helpers, imports and constants) or a
Python builtin, so that a placeholder named ``_ldmatrix_x4`` does not shadow the helper
the kernel calls (issue 30, item 6: it passed ``tc.check`` and ``tc.build``, then the call
failed with a TypeError)."""

import ast
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import tcomp as tc
from tcomp.codegen.cuda_source import program_source
from workloads import check_float, run

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from gemm_bf16 import mma_warp_tiles  # noqa: E402

TILES = dict(BM=32, BN=32, BK=32, WM=32, WN=32, stages=3, pad=0)


def _product(a_name: str, M=32, N=32, K=64, tiles=TILES):
    A = tc.placeholder((M, K), "bfloat16", name=a_name)
    W = tc.placeholder((K, N), "bfloat16", name="W")
    k = tc.reduce_axis(K, name="k")
    C = tc.compute((M, N), lambda i, j: tc.sum(tc.cast(A[i, k], "float32") * tc.cast(W[k, j], "float32"), axis=k),
                   name="C")
    s = tc.create_schedule(C)
    mma_warp_tiles(s, C, "C", a_name, "W", **tiles)
    return s


def _kernel_parameters(source: str) -> list:
    tree = ast.parse(source)
    return [a.arg for node in tree.body if isinstance(node, ast.FunctionDef) and node.name.startswith("k_")
            for a in node.args.args]


def _module_names(source: str) -> set:
    """The names the module binds outside its kernels."""
    names = set()
    for node in ast.parse(source).body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.FunctionDef) and not node.name.startswith("k_"):
            names.add(node.name)
    return names


@pytest.mark.parametrize("simulator", [True, False])
def test_no_parameter_takes_a_name_of_the_module(simulator):
    source = program_source(tc.lower(_product("A")), simulator=simulator)
    taken = _module_names(source) | {"range", "min", "max", "abs"}
    assert "_ldmatrix_x4" in taken
    for name in sorted(taken):
        params = _kernel_parameters(program_source(tc.lower(_product(name)), simulator=simulator))
        assert not set(params) & taken, f"a placeholder named {name!r} became parameter {params}"


@pytest.mark.parametrize("name", ["_ldmatrix_x4", "range", "_dynamic_shared_uint16"])
def test_a_placeholder_named_like_a_helper_runs(name, rng):
    s = _product(name)
    tc.check(s)
    a = rng.standard_normal((32, 64)).astype("float32")
    w = rng.standard_normal((64, 32)).astype("float32")
    import ml_dtypes
    a16, w16 = a.astype(ml_dtypes.bfloat16), w.astype(ml_dtypes.bfloat16)
    want = a16.astype(np.float64) @ w16.astype(np.float64)
    check_float(run(s, [a16, w16]), want, rtol=1e-4, atol=1e-4)


def test_the_dynamic_shared_memory_names_go_through_the_namer():
    """A kernel with more shared memory than a static array holds declares it dynamic; a
    placeholder named like that array keeps its own name apart."""
    large = dict(BM=128, BN=128, BK=32, WM=64, WN=64, stages=4, pad=8)  # 80 KiB of shared memory
    source = program_source(tc.lower(_product("_dynamic_shared_uint16", 128, 128, 128, large)), simulator=False)
    (array,) = re.findall(r"(\w+) = cuda\.shared\.array\(0, uint16\)", source)
    params = _kernel_parameters(source)
    assert params[0] == "_dynamic_shared_uint16" and array != params[0]
