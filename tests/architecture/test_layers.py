"""The layering that docs/architecture.md draws, checked on the sources: a
file "calls" another when it names a function that the other defines (not
static), and includes it when it has an #include "..." of it.  No circle of
files calling each other anywhere (the core, the operators, the compiler,
the CPU backend, the CUDA backend and its emulation, each alone and all
together), no circle of includes; backends never call up into
csrc/compiler/; the core names no function a backend defines (it reaches a
backend through its wnn_backend_i only); the CUDA library's sources name no
function of the core except through the services table; the compiler and
the core switch on no operator id (they ask the ops.def table)."""
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CSRC = ROOT / "csrc"

_DEF = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\(", re.M)
_IDENT = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\b")
_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_STRING = re.compile(r'"(?:\\.|[^"\\])*"')


def _strip(text):
    return _STRING.sub('""', _COMMENT.sub(" ", text))


def _definitions(path):
    """Functions defined at file scope and visible to other files: the name
    at column 0 followed by '(', its return type on the line before (the
    code's style), not static."""
    text = _strip(path.read_text())
    lines = text.split("\n")
    out = set()
    for i, line in enumerate(lines):
        m = _DEF.match(line)
        if not m or i == 0:
            continue
        before = lines[i - 1]
        if m.group(1).startswith("__") or m.group(1).isupper():
            continue  # attributes, macros
        if "static" in before or before.strip().endswith((";", "{", "}")) or not before.strip():
            continue
        if "__device__" in before or "__global__" in before:
            continue  # device code: not callable from another file's host code
        out.add(m.group(1))
    return out


def _local_definitions(path):
    """Every function the file defines, static or not: a name it defines
    itself is its own (a static definition hides another file's)."""
    text = _strip(path.read_text())
    lines = text.split("\n")
    return {m.group(1) for i, line in enumerate(lines) if i and (m := _DEF.match(line))
            and lines[i - 1].strip() and not lines[i - 1].strip().endswith((";", "{", "}"))}


def _graph(files):
    defs = {f: _definitions(f) for f in files}
    owner = {}
    for f, names in defs.items():
        for n in names:
            owner.setdefault(n, f)
    edges = {f: set() for f in files}
    for f in files:
        for name in set(_IDENT.findall(_strip(f.read_text()))) - _local_definitions(f):
            g = owner.get(name)
            if g is not None and g != f:
                edges[f].add(g)
    return defs, edges


def _cycle(edges):
    """A circle of files in the graph, or None."""
    state, stack = {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(edges[n]):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                c = visit(m)
                if c:
                    return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(edges):
        if n not in state:
            c = visit(n)
            if c:
                return c
    return None


def _c_files(*dirs):
    return sorted(p for d in dirs for p in (CSRC / d).rglob("*.c"))


KERNELS_CUDA = ROOT / "kernels_cuda"


def _cuda_files():
    """The CUDA library's sources (host C and kernels)."""
    return sorted(KERNELS_CUDA.glob("*.c")) + sorted(KERNELS_CUDA.glob("*.cu"))


def _all_files():
    """Every source of the library: csrc/ (but the unit tests and the fuzz
    harness, programs of their own), the CUDA backend and its emulation."""
    core = sorted(p for p in CSRC.rglob("*.c")
                  if "tests" not in p.relative_to(CSRC).parts
                  and "fuzz" not in p.relative_to(CSRC).parts)
    return core + _cuda_files() + sorted((KERNELS_CUDA / "emu").glob("*.c"))


_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def _include_graph():
    """file -> the files it includes ("..." only), resolved as the build
    does: next to the includer, then csrc/include/.  A file that includes
    itself (cpu/kernels/pool2d/pool2d.c instantiates its loops so) is no
    circle."""
    files = sorted(p for d in (CSRC, KERNELS_CUDA) for p in d.rglob("*")
                   if p.suffix in (".c", ".h", ".cu", ".cuh", ".def"))
    edges = {}
    for f in files:
        out = set()
        for name in _INCLUDE.findall(f.read_text()):
            for base in (f.parent, CSRC / "include", KERNELS_CUDA):
                t = (base / name).resolve()
                if t.is_file():
                    if t != f.resolve():
                        out.add(t)
                    break
        edges[f.resolve()] = out
    return edges


def _rel(paths):
    return " -> ".join(str(p.relative_to(ROOT)) for p in paths)


def test_definitions_are_found():
    # the parser sees the functions the checks rely on (it must not pass by
    # finding nothing)
    defs = _definitions(CSRC / "compiler" / "lower" / "matmul.c")
    assert {"wnn_lower_matmul", "wnn_lower_gemm"} <= defs
    assert "wnn_tensor_create" in _definitions(CSRC / "core" / "context.c")
    assert "cpu_epi_tile" in _definitions(CSRC / "cpu" / "epilogue.c")


@pytest.mark.parametrize("layer", ["core", "ops", "compiler", "cpu", "kernels_cuda", "all"])
def test_no_circle_of_files(layer):
    files = (_all_files() if layer == "all" else _cuda_files()
             if layer == "kernels_cuda" else _c_files(layer))
    _, edges = _graph(files)
    # (the compiler's files call each other least: lower.c its families')
    assert sum(len(e) for e in edges.values()) > 2, "no calls found: the parser is broken"
    c = _cycle(edges)
    assert c is None, "files calling each other in a circle: " + _rel(c)


def test_the_cycle_finder_finds_circles():
    # _cycle must not pass by never finding one
    a, b, c = (ROOT / n for n in ("a.c", "b.c", "c.c"))
    assert _cycle({a: {b}, b: {c}, c: {a}}) is not None
    assert _cycle({a: {b}, b: {c}, c: set()}) is None


def test_the_cuda_backend_calls_down_only():
    # backend_cuda.c -> cu_launch.c -> the leaves (cu_blas.c, cu_dnn.c,
    # cu_ops.c) -> cu_device.c, which calls none of them
    _, edges = _graph(_cuda_files())
    names = {f: {g.name for g in e} for f, e in edges.items()}
    by = {f.name: n for f, n in names.items()}
    assert {"cu_launch.c", "cu_device.c"} <= by["backend_cuda.c"]
    assert {"cu_blas.c", "cu_dnn.c", "cu_device.c"} <= by["cu_launch.c"]
    assert not by["cu_device.c"] & {"backend_cuda.c", "cu_launch.c", "cu_blas.c", "cu_dnn.c", "cu_ops.c"}
    callers = {f for f, n in by.items() if "backend_cuda.c" in n}
    assert not callers, f"backend_cuda.c is the top: {sorted(callers)} call it"


def test_no_circle_of_includes():
    edges = _include_graph()
    assert sum(len(e) for e in edges.values()) > 50, "no includes found: the parser is broken"
    assert (CSRC / "core" / "internal.h").resolve() in edges[(CSRC / "core" / "compile.c").resolve()]
    c = _cycle(edges)
    assert c is None, "files including each other in a circle: " + _rel(c)


def test_the_core_names_no_backend_function():
    backend_defs = set()
    for f in _c_files("cpu") + _cuda_files():
        backend_defs |= _definitions(f)
    assert {"cpu_num_threads", "cu_execute"} <= backend_defs
    used = {}
    for f in sorted((CSRC / "core").glob("*.[ch]")):
        names = set(_IDENT.findall(_strip(f.read_text()))) & backend_defs
        if names:
            used[f.name] = sorted(names)
    assert not used, f"the core names a backend's functions: {used}"
    includes = _include_graph()
    up = {f.name: sorted(str(g.relative_to(ROOT)) for g in gs
                         if (CSRC / "cpu") in g.parents or KERNELS_CUDA in g.parents)
          for f, gs in includes.items() if (CSRC / "core") in f.parents}
    up = {k: v for k, v in up.items() if v}
    assert not up, f"the core includes a backend's headers: {up}"


def test_the_compiler_and_the_core_switch_on_no_operator():
    # operator classes are ops.def's family and traits columns
    hits = {}
    for f in _c_files("compiler", "core"):
        n = len(re.findall(r"\bcase\s+WNN_OP_", _strip(f.read_text())))
        if n:
            hits[str(f.relative_to(ROOT))] = n
    assert not hits, f"switches on operator ids: {hits}"


def test_backends_do_not_call_the_compiler():
    compiler = _c_files("compiler")
    cpu = _c_files("cpu")
    cuda = _cuda_files()
    defs, edges = _graph(compiler + cpu + cuda)
    up = [(f, g) for f in cpu + cuda for g in edges[f] if g in compiler]
    assert not up, "a backend calls up into csrc/compiler/: " + ", ".join(
        _rel([f, g]) for f, g in up)


def test_the_cuda_library_names_no_function_of_the_core():
    core_defs = set()
    for f in _c_files("core", "ops", "compiler", "backend"):
        core_defs |= _definitions(f)
    assert "wnn_failk" in core_defs and "wnn_desc_elements" in core_defs
    used = {}
    for f in _cuda_files():
        names = set(_IDENT.findall(_strip(f.read_text()))) & core_defs
        # a call through the services table reads cu_core->name(...)
        text = _strip(f.read_text())
        direct = {n for n in names if re.search(r"(?<![>.])\b" + n + r"\s*\(", text)}
        if direct:
            used[f.name] = sorted(direct)
    assert not used, f"the CUDA library calls the core directly: {used}"


def test_products_go_through_the_gemm_service():
    """The CPU backend's float32 products have one entry, cpu_product
    (cpu/gemm.h, cpu/gemm.c): no file but the service names the kernels it
    chooses from (the BLIS wrapper's functions, the register-blocked
    kernel's product entry) or BLIS itself (bli_*), the files that define
    them aside; and the service calls no operator kernel (no circle)."""
    cpu = CSRC / "cpu"
    service = cpu / "gemm.c"
    files = _c_files("cpu")
    defs, edges = _graph(files)
    kernels = {"cpu_blis_sgemm", "cpu_blis_sgemm_1t", "cpu_blis_sgemm_tasks",
               "cpu_direct_product", "cpu_direct_packed_floats", "cpu_direct_pack",
               "cpu_direct_packed_product"}
    owners = {n: f for f, names in defs.items() for n in names if n in kernels}
    assert set(owners) == kernels, "the service's kernels are not found: the parser is broken"
    assert "cpu_product" in defs[service]
    blis = cpu / "blis" / "sgemm.c"
    bad = []
    for f in files + sorted(cpu.rglob("*.h")):
        if f == service:
            continue
        names = set(_IDENT.findall(_strip(f.read_text())))
        for n in sorted(names & kernels):
            if f != owners[n] and f != cpu / "gemm.h":  # gemm.h declares them
                bad.append(f"{f.relative_to(ROOT)} names {n}")
        if f != blis and any(n.startswith("bli_") for n in names):
            bad.append(f"{f.relative_to(ROOT)} calls BLIS")
    assert not bad, "products outside the GEMM service: " + "; ".join(bad)
    callers = sorted(str(f.relative_to(ROOT)) for f, e in edges.items() if service in e)
    assert {"csrc/cpu/kernels/matmul/matmul.c",
            "csrc/cpu/kernels/recurrent/recurrent.c"} <= set(callers), callers
    assert edges[service] <= {blis, cpu / "kernels" / "conv" / "direct.c",
                              cpu / "pool.c", cpu / "support.c", cpu / "config.c",
                              cpu / "backend_cpu.c"}, sorted(edges[service])


def _cuda_kinds():
    """cuda_ops.h's launcher kinds: {kind: run launcher} and the service
    kinds."""
    text = _strip((KERNELS_CUDA / "cuda_ops.h").read_text())
    text = text[text.index("#endif"):]  # past the macros' defaults
    kinds = dict(re.findall(r"^CU_KIND\((\w+),\s*(\w+),\s*(?:ANY|FLOAT)\)", text, re.M))
    service = re.findall(r"^CU_SERVICE_KIND\((\w+),\s*(?:ANY|FLOAT)\)", text, re.M)
    return kinds, service


def test_run_node_has_no_case_per_kind():
    # a new GPU family edits cuda_ops.h (its CU_KIND row) and its .cu file
    # (the run launcher): the K_* enum and run_node's table are generated,
    # run_node names only the service kinds (cuBLAS, the views)
    kinds, service = _cuda_kinds()
    assert len(kinds) >= 20 and set(service) == {"VIEWS", "MATMUL", "GEMM", "RNN"}, (kinds, service)
    launch = _strip((KERNELS_CUDA / "cu_launch.c").read_text())
    cases = set(re.findall(r"\bcase\s+K_(\w+)", launch))
    assert cases <= set(service), f"cu_launch.c switches on kinds {sorted(cases - set(service))}"
    for name in kinds.values():
        assert name not in launch, f"cu_launch.c calls {name} by name"
    internal = _strip((KERNELS_CUDA / "cu_internal.h").read_text())
    hand = [k for k in list(kinds) + service if re.search(r"\bK_%s\b" % k, internal)]
    assert not hand, f"K_* written by hand in cu_internal.h: {hand}"
    # each run launcher defined once, in a .cu file, with the one signature
    cu = {p.name: _strip(p.read_text()) for p in KERNELS_CUDA.glob("*.cu")}
    for kind, name in kinds.items():
        where = [f for f, t in cu.items()
                 if re.search(r"^%s\(const cu_launch_args \*a\)\s*\{" % name, t, re.M)]
        assert len(where) == 1, (kind, name, where)
