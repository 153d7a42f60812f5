"""The layering that docs/architecture.md draws, checked on the sources: a
file "calls" another when it names a function that the other defines (not
static).  Backends never call up into csrc/compiler/; csrc/core/ and
csrc/cpu/ have no circle of files calling each other; the CUDA library's
sources name no function of the core except through the services table."""
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
        out.add(m.group(1))
    return out


def _graph(files):
    defs = {f: _definitions(f) for f in files}
    owner = {}
    for f, names in defs.items():
        for n in names:
            owner.setdefault(n, f)
    edges = {f: set() for f in files}
    for f in files:
        for name in set(_IDENT.findall(_strip(f.read_text()))):
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


def _rel(paths):
    return " -> ".join(str(p.relative_to(ROOT)) for p in paths)


def test_definitions_are_found():
    # the parser sees the functions the checks rely on (it must not pass by
    # finding nothing)
    defs = _definitions(CSRC / "compiler" / "lower" / "matmul.c")
    assert {"wnn_lower_matmul", "wnn_lower_gemm"} <= defs
    assert "wnn_tensor_create" in _definitions(CSRC / "core" / "context.c")
    assert "cpu_epi_tile" in _definitions(CSRC / "cpu" / "epilogue.c")


@pytest.mark.parametrize("layer", ["core", "cpu"])
def test_no_circle_of_files(layer):
    _, edges = _graph(_c_files(layer))
    assert sum(len(e) for e in edges.values()) > 5, "no calls found: the parser is broken"
    c = _cycle(edges)
    assert c is None, "files calling each other in a circle: " + _rel(c)


def test_backends_do_not_call_the_compiler():
    compiler = _c_files("compiler")
    cpu = _c_files("cpu")
    cuda = sorted((ROOT / "kernels_cuda").glob("*.c"))
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
    for f in sorted((ROOT / "kernels_cuda").glob("*.c")) + sorted((ROOT / "kernels_cuda").glob("*.cu")):
        names = set(_IDENT.findall(_strip(f.read_text()))) & core_defs
        # a call through the services table reads cu_core->name(...)
        text = _strip(f.read_text())
        direct = {n for n in names if re.search(r"(?<![>.])\b" + n + r"\s*\(", text)}
        if direct:
            used[f.name] = sorted(direct)
    assert not used, f"the CUDA library calls the core directly: {used}"
