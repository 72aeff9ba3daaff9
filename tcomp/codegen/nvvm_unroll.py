"""Loops that NVVM unrolls: ``unroll`` loops stay loops in the generated source.

Unrolling a loop in the Python source makes one huge basic block, and numba-cuda's
front end is quadratic in the size of a block (``Lower._find_singly_assigned_variable``
scans every assignment of the block for every variable): the warptiled SGEMM rung took
67 s to build that way. Instead, the code generator keeps every ``unroll`` loop as a
``for ... in range(_u32_N)`` loop and asks NVVM to unroll it fully, with the loop
metadata that CUDA C++'s ``#pragma unroll`` produces (``llvm.loop.unroll.full``).
Per-thread arrays indexed by the loop variables then become registers after unrolling,
as before.

How the loops are found: a generated module lists, per kernel, whether each ``for``
statement of the kernel's source (in source order) is to be unrolled
(``UNROLL_LOOPS = {"k_C": (False, True, ...)}``). Numba names the basic blocks of the
LLVM IR after bytecode offsets (``B134``), which grow in source order, and every Python
``for`` statement becomes one loop whose header is the target of the loop's back edges
(branches to a block at or before the branching block). The n-th loop header by offset
is the n-th ``for`` statement. The rewrite checks that the counts agree and raises an
``InternalError`` otherwise.

``install()`` wraps ``numba.cuda.cudadrv.nvvm.compile_ir`` once; IR of functions that
were not registered passes through unchanged.
"""

from __future__ import annotations

import re

from ..errors import InternalError

#: bumped whenever the rewrite changes what NVVM receives (part of the generated source,
#: so that kernels cached on disk by an older rewrite are not reused)
REWRITE_VERSION = 1

#: mangled-name prefix of a registered kernel -> its loops' unroll flags in source order
_REGISTRY: dict[str, tuple[bool, ...]] = {}
_installed = False

_DEFINE = re.compile(r'^define [^@]*@"?([^"( ]+)"?\(.*\n?\{$', re.M)
_LABEL = re.compile(r'^"?(B(\d+)[^:"]*)"?:', re.M)
_BRANCH = re.compile(r'^(\s+br (?:i1 [^,]+, )?label %"?[^",\s]+"?(?:, label %"?[^",\s]+"?)?)(.*)$', re.M)
_TARGET = re.compile(r'label %"?(B(\d+))"?(?=[,\s]|$)')
_METADATA_ID = re.compile(r"!(\d+)\b")


def mangled_prefix(module_name: str, function_name: str) -> str:
    """The start of numba's mangled name of ``module_name.function_name``."""
    parts = "".join(f"{len(p)}{p}" for p in module_name.split(".") + [function_name])
    return f"_ZN{parts}"


def register(module_name: str, loops: dict) -> None:
    """Record the unroll flags of the kernels of generated module ``module_name``."""
    install()
    for kernel, flags in loops.items():
        _REGISTRY[mangled_prefix(module_name, kernel)] = tuple(flags)


def install() -> None:
    """Wrap NVVM's compile entry point (once) so that registered kernels get their
    unroll metadata."""
    global _installed
    if _installed:
        return
    from numba.cuda.cudadrv import nvvm

    compile_ir = nvvm.compile_ir

    def compile_ir_with_unroll(llvmir, **options):
        if isinstance(llvmir, (list, tuple)):
            llvmir = [add_unroll_metadata(ir) if isinstance(ir, str) else ir for ir in llvmir]
        elif isinstance(llvmir, str):
            llvmir = add_unroll_metadata(llvmir)
        return compile_ir(llvmir, **options)

    nvvm.compile_ir = compile_ir_with_unroll
    _installed = True


def add_unroll_metadata(ir: str) -> str:
    """``ir`` with ``llvm.loop.unroll.full`` on the back edges of every registered
    kernel's loops that are flagged for unrolling."""
    if not _REGISTRY:
        return ir
    functions = [(m, flags) for m in _DEFINE.finditer(ir)
                 for prefix, flags in _REGISTRY.items() if m.group(1).startswith(prefix)]
    if not functions or not any(any(flags) for _, flags in functions):
        return ir
    next_id = max((int(n) for n in _METADATA_ID.findall(ir)), default=-1) + 1
    full = next_id
    nodes = [f'!{full} = !{{!"llvm.loop.unroll.full"}}']
    next_id += 1
    pieces, last = [], 0
    for match, flags in sorted(functions, key=lambda f: f[0].start()):
        start = match.end()
        end = ir.index("\n}", start)
        body, loop_ids = _tag_loops(ir[start:end], flags, next_id, full, match.group(1))
        next_id += len(loop_ids)
        nodes += [f"!{n} = distinct !{{!{n}, !{full}}}" for n in loop_ids]
        pieces += [ir[last:start], body]
        last = end
    pieces.append(ir[last:])
    return "".join(pieces).rstrip("\n") + "\n" + "\n".join(nodes) + "\n"


def _tag_loops(body: str, flags: tuple, first_id: int, full_id: int, name: str):
    """The function body with loop metadata on the back edges of flagged loops, and the
    metadata ids it used."""
    blocks = []  # (start offset in body, block label offset)
    for m in _LABEL.finditer(body):
        blocks.append((m.start(), int(m.group(2))))
    headers: set[int] = set()
    back_edges = []  # (position of the branch in body, header offset)
    for m in _BRANCH.finditer(body):
        where = _block_offset(blocks, m.start())
        if where is None:
            continue
        for t in _TARGET.finditer(m.group(1)):
            target = int(t.group(2))
            if t.group(1) == f"B{target}" and target <= where:
                headers.add(target)
                back_edges.append((m, target))
    ordered = sorted(headers)
    if len(ordered) != len(flags):
        raise InternalError(f"kernel {name}: {len(ordered)} loops in the LLVM IR, {len(flags)} for "
                            "statements in the generated source; cannot place unroll pragmas")
    ids = {}
    for header, unroll in zip(ordered, flags):
        if unroll:
            ids[header] = first_id + len(ids)
    out, last = [], 0
    for m, header in back_edges:
        if header not in ids:
            continue
        if "!llvm.loop" in m.group(2):
            raise InternalError(f"kernel {name}: a back edge carries loop metadata already")
        out += [body[last:m.end(1)], f", !llvm.loop !{ids[header]}", m.group(2)]
        last = m.end()
    out.append(body[last:])
    return "".join(out), sorted(ids.values())


def _block_offset(blocks, position: int):
    """The bytecode offset of the block holding ``position`` (None before the first B
    block, in the entry block)."""
    found = None
    for start, offset in blocks:
        if start > position:
            break
        found = offset
    return found
