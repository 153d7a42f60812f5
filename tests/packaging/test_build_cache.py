"""setup.py's incremental build keeps an object when its compile command, as
_codegen_key writes it, is the one it would run now.  The core's sources are
compiled with -fno-strict-overflow added, so that the builds for Python 3.10-
3.12 (whose flags carry -fwrapv) and 3.13 (-fno-strict-overflow) share the
core's objects (tests/packaging/test_pythons.sh): the key must say those
commands are the same, and GCC must make the same object from both.
UndefinedBehaviorSanitizer's builds compile the core with -fno-wrapv last
instead, so that UBSan checks signed overflow there."""
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

CORE = ["-c", "-std=c11", "-O3", "-fopenmp-simd", "-D_GNU_SOURCE", "csrc/ops/reduce.c"]
PY311 = ["gcc", "-DNDEBUG", "-g", "-fwrapv", "-O3", "-fPIC", "-Wall"]
PY313 = ["gcc", "-fno-strict-overflow", "-DNDEBUG", "-g", "-O3", "-fPIC"]


def test_core_commands_of_both_interpreters_are_one_key(setup_py):
    flag = setup_py.CORE_OVERFLOW_FLAG
    assert setup_py._codegen_key(PY311 + CORE + [flag]) == setup_py._codegen_key(PY313 + CORE + [flag])
    # without the core's flag they are different code (-fwrapv-pointer)
    assert setup_py._codegen_key(PY311 + CORE) != setup_py._codegen_key(PY313 + CORE)
    # warnings aside, every other flag still counts
    assert setup_py._codegen_key(PY311 + CORE + ["-Wextra"]) == setup_py._codegen_key(PY311 + CORE)
    assert setup_py._codegen_key(PY311 + CORE + ["-O2"]) != setup_py._codegen_key(PY311 + CORE)
    assert setup_py._codegen_key(PY311 + CORE + ["-Wl,-z,now"]) != setup_py._codegen_key(PY311 + CORE)


def compile_both(src, tmp_path, extra):
    """src compiled by the two interpreters' commands as the builds run them
    (no -g: its record of the command line is all it would add)"""
    common = ["-c", "-std=c11", "-O3", "-fopenmp-simd", "-D_GNU_SOURCE", "-fPIC",
              "-Icsrc/include", "-I/usr/include/x86_64-linux-gnu", src]
    objs = []
    for i, head in enumerate((["gcc", "-DNDEBUG", "-fwrapv", "-O3"],
                              ["gcc", "-fno-strict-overflow", "-DNDEBUG", "-O3"])):
        obj = tmp_path / f"{i}.o"
        subprocess.run(head + common + extra + ["-o", str(obj)], cwd=ROOT, check=True)
        objs.append(obj.read_bytes())
    return objs


# two of the core's sources whose code -fwrapv-pointer changes
@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
@pytest.mark.parametrize("src", ["csrc/core/timeline.c", "csrc/cpu/attention.c"])
def test_gcc_makes_the_same_object(setup_py, tmp_path, src):
    plain = compile_both(src, tmp_path, [])
    assert plain[0] != plain[1], "the interpreters' own flags make different code here"
    core = compile_both(src, tmp_path, [setup_py.CORE_OVERFLOW_FLAG])
    assert core[0] == core[1]


def ubsan_add_checks(flags, tmp_path):
    """how many signed-overflow checks UBSan puts in an int addition compiled
    with CPython 3.11's flags and then `flags`"""
    src = tmp_path / "add.c"
    src.write_text("int add(int a, int b) { return a + b; }\n")
    asm = subprocess.run(PY311 + ["-O1", "-fsanitize=undefined", "-S", "-o", "-", str(src)] + flags,
                         capture_output=True, text=True, check=True).stdout
    return asm.count("__ubsan_handle_add_overflow")


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_ubsan_builds_check_signed_overflow_in_the_core(setup_py_loader, monkeypatch, tmp_path):
    for value, want in ((None, []), ("thread", []), ("1", ["-fno-wrapv"]), ("fuzz", ["-fno-wrapv"])):
        if value is None:
            monkeypatch.delenv("WEBNN_SANITIZE", raising=False)
        else:
            monkeypatch.setenv("WEBNN_SANITIZE", value)
        assert setup_py_loader().UBSAN_CORE_FLAGS == want, value
    # CPython's -fwrapv alone drops the check; the UBSan builds' flags restore it
    assert ubsan_add_checks([], tmp_path) == 0
    assert ubsan_add_checks(["-fno-wrapv"], tmp_path) >= 1


class RecordingCompiler:
    """the parts of a distutils compiler that _parallel_incremental_compile
    uses, recording each compile command instead of running it"""
    compiler_so = ["gcc", "-DNDEBUG", "-fwrapv", "-O3"]
    force = False

    def __init__(self, tmp_path):
        self.tmp_path, self.calls = tmp_path, []

    def _setup_compile(self, output_dir, macros, include_dirs, sources, depends, extra_postargs):
        build = {str(self.tmp_path / (s.replace("/", "_") + ".o")): (s, ".c") for s in sources}
        return macros, list(build), list(extra_postargs or []), ["-Icsrc/include"], build

    def _get_cc_args(self, pp_opts, debug, before):
        return pp_opts + ["-c"]

    def _compile(self, obj, src, ext, cc_args, extra_postargs, pp_opts):
        self.calls.append((src, list(self.compiler_so) + cc_args + [src] + extra_postargs))


@pytest.mark.parametrize("sanitize", [None, "1", "thread"])
def test_the_core_flags_reach_the_compile_commands(setup_py_loader, monkeypatch, tmp_path, sanitize):
    if sanitize is None:
        monkeypatch.delenv("WEBNN_SANITIZE", raising=False)
    else:
        monkeypatch.setenv("WEBNN_SANITIZE", sanitize)
    mod = setup_py_loader()
    cc = RecordingCompiler(tmp_path)
    mod._parallel_incremental_compile(cc, [], [])
    cc.compile(["csrc/ops/reduce.c", "webnn/_binding/module.c"], output_dir=str(tmp_path))
    cmds = dict(cc.calls)
    core, binding = cmds["csrc/ops/reduce.c"], cmds["webnn/_binding/module.c"]
    assert "-Wextra" in core and "-Wextra" not in binding
    if sanitize == "1":  # signed overflow undefined in the core: -fno-wrapv after -fwrapv
        assert core[-1] == "-fno-wrapv" and mod.CORE_OVERFLOW_FLAG not in core
    else:  # the flag that makes every interpreter's objects of the core the same
        assert mod.CORE_OVERFLOW_FLAG in core and "-fno-wrapv" not in core
    assert "-fno-wrapv" not in binding and mod.CORE_OVERFLOW_FLAG not in binding
