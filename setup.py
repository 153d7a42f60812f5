"""Builds webnn._core: the C core (csrc/) and the CPython layer
(webnn/_binding/) in one extension, linked against BLIS; the CPU kernels
thread on their own pool (csrc/cpu/pool.c), OpenMP is only used for
`#pragma omp simd` (-fopenmp-simd, no runtime).

BLIS is looked for, in this order (the first that has blis.h wins):
  BLIS_DIR=<prefix>      a BLIS installation: <prefix>/include[/blis]/blis.h and
                         <prefix>/lib[64]/libblis.so (also a `make install` of BLIS);
                         the library's folder goes into the extension's RUNPATH
  WEBNN_BLIS_PREFIX=<d>  a folder holding Debian's BLIS packages unpacked with
                         `dpkg -x` (usr/include/..., usr/lib/...), for hosts
                         without libblis-dev (scripts/gpu_check.sh)
  $CONDA_PREFIX          an active conda environment with conda-forge's `blis`
  the system             /usr/include[/<multiarch>][/blis], /usr/local/include[/blis],
                         $CPATH, $C_INCLUDE_PATH (Debian/Ubuntu libblis-dev,
                         Fedora blis-devel, a BLIS built from source)
Without it, the build stops at once with a message that says what to install.

The CUDA backend (kernels_cuda/) is a separate shared object,
webnn/libwebnn_cuda.so, loaded at run time (dlopen) only when a GPU is asked
for, so the core never links against CUDA.  `build_ext` builds it after the
core with kernels_cuda/build_cuda.py when nvcc is found ($NVCC,
$CUDA_HOME/bin/nvcc, nvcc on PATH, or /usr/local/cuda/bin/nvcc): sm_90 code
plus compute_90 PTX, linked with -lcudart -lcublas and a RUNPATH into the
environment's NVIDIA wheels (`pip install webnn[cuda]`), never into the
build machine's CUDA.  Without nvcc (or with WEBNN_NO_CUDA=1) the step is
skipped with a message; with nvcc, a compile or link error fails the build.
See build_cuda.py for its variables (WEBNN_NO_CUDA, NVCC, CUDA_HOME,
WEBNN_CUDA_ARCHS, WEBNN_NVCC_FLAGS).

Other environment:
  WEBNN_SANITIZE=1       ASan + UBSan build of the core
  WEBNN_SANITIZE=thread  ThreadSanitizer build of the core
  WEBNN_SANITIZE=fuzz    (with CC=clang) ASan + UBSan + libFuzzer coverage, for
                         the binding's fuzzer (tests/fuzz/fuzz_binding.py)

The version is webnn/_version.py's (pyproject.toml: dynamic).  MANIFEST.in
lists what the sdist carries; the wheel carries no C sources.
"""
import glob
import os
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))


class BlisNotFound(Exception):
    pass


INSTALL_BLIS = """\
webnn needs BLIS (https://github.com/flame/blis) to build its CPU backend, and {what}.
Install it:
  Debian/Ubuntu:  sudo apt-get install libblis-dev
  Fedora/RHEL:    sudo dnf install blis-devel
  conda:          conda install -c conda-forge blis    (then build inside that environment)
or point at an installation (a prefix with include/blis.h or include/blis/blis.h and
lib/libblis.so):
  BLIS_DIR=/path/to/blis pip install webnn-<version>.tar.gz
Or install the prebuilt wheel, which carries its own BLIS: pip install webnn"""


def _blis_h_dir(inc):
    for d in (inc, os.path.join(inc, "blis")):
        if os.path.isfile(os.path.join(d, "blis.h")):
            return d
    return None


def _lib_dir(prefix):
    for sub in ("lib", "lib64", os.path.join("lib", sysconfig.get_config_var("MULTIARCH") or "")):
        d = os.path.join(prefix, sub)
        if glob.glob(os.path.join(d, "libblis.so*")) or os.path.isfile(os.path.join(d, "libblis.a")):
            return d
    return None


def find_blis(environ=os.environ, system_includes=None):
    """(include_dirs, library_dirs, runtime_dirs) for BLIS, or BlisNotFound
    with a message that says what to install."""
    blis_dir = environ.get("BLIS_DIR")
    if blis_dir:
        p = os.path.abspath(blis_dir)
        inc = _blis_h_dir(os.path.join(p, "include"))
        lib = _lib_dir(p)
        if not inc or not lib:
            raise BlisNotFound(INSTALL_BLIS.format(
                what=f"BLIS_DIR={blis_dir} has no "
                     + ("include/blis.h (nor include/blis/blis.h)" if not inc else
                        "lib/libblis.so (nor lib64/)")))
        return [inc], [lib], [lib]
    blis_prefix = environ.get("WEBNN_BLIS_PREFIX")
    if blis_prefix:
        # Debian's layout: the OpenMP flavour under blis-openmp/ (the plain
        # paths are update-alternatives links, which dpkg -x does not make).
        p = os.path.abspath(blis_prefix)
        incs, libs = [], []
        for flavour in ("blis-openmp", "blis-pthread", "blis-serial", ""):
            inc = os.path.join(p, "usr/include/x86_64-linux-gnu", flavour)
            lib = os.path.join(p, "usr/lib/x86_64-linux-gnu", flavour)
            if os.path.isfile(os.path.join(inc, "blis.h")):
                incs.append(inc)
            if glob.glob(os.path.join(lib, "libblis.so*")):
                libs.append(lib)
        if not incs or not libs:
            raise BlisNotFound(INSTALL_BLIS.format(
                what=f"WEBNN_BLIS_PREFIX={blis_prefix} has no blis.h and libblis.so under "
                     f"{p}/usr/{{include,lib}}/x86_64-linux-gnu/blis-*"))
        return incs, libs, libs
    conda = environ.get("CONDA_PREFIX")
    if conda:
        inc = _blis_h_dir(os.path.join(conda, "include"))
        lib = _lib_dir(conda)
        if inc and lib:
            return [inc], [lib], [lib]
    if system_includes is None:
        multiarch = sysconfig.get_config_var("MULTIARCH") or "x86_64-linux-gnu"
        system_includes = ["/usr/include", f"/usr/include/{multiarch}", "/usr/local/include"]
        for var in ("CPATH", "C_INCLUDE_PATH"):
            system_includes += [d for d in environ.get(var, "").split(os.pathsep) if d]
    for d in system_includes:
        inc = _blis_h_dir(d)
        if inc:
            return [inc], [], []
    raise BlisNotFound(INSTALL_BLIS.format(
        what="blis.h was not found (looked in BLIS_DIR, WEBNN_BLIS_PREFIX, $CONDA_PREFIX, "
             + ", ".join(system_includes) + ")"))


core_sources = sorted(glob.glob(os.path.join("csrc", "**", "*.c"), recursive=True))
core_sources = [s for s in core_sources if os.sep + "tests" + os.sep not in s
                and os.sep + "fuzz" + os.sep not in s]

extra_compile = ["-std=c11", "-O3", "-fopenmp-simd", "-D_GNU_SOURCE", "-fvisibility=hidden",
                 "-Wall", "-Wno-unused-parameter", "-Wno-format-truncation"]
extra_link = []
sanitize = os.environ.get("WEBNN_SANITIZE")
# functions left without libFuzzer's coverage callbacks (the file says why)
FUZZ_IGNORELIST = os.path.join("csrc", "fuzz", "coverage_ignore.txt")
if sanitize == "fuzz":  # clang: ASan + UBSan + libFuzzer coverage (make fuzz-py, fuzz)
    extra_compile += ["-O1", "-g", "-fsanitize=address,undefined,fuzzer-no-link",
                      "-fno-sanitize-recover=undefined", "-fno-omit-frame-pointer",
                      "-fsanitize-coverage-ignorelist=" + FUZZ_IGNORELIST,
                      "-Wno-unknown-warning-option", "-Wno-pass-failed"]
    extra_link += ["-fsanitize=address,undefined,fuzzer-no-link", "-shared-libasan"]
elif sanitize == "thread":  # ThreadSanitizer (make test-tsan)
    extra_compile += ["-O1", "-g", "-fsanitize=thread", "-fno-omit-frame-pointer"]
    extra_link += ["-fsanitize=thread"]
elif sanitize:  # ASan + UBSan (make test-asan; its objects of the core are test_core_asan's)
    extra_compile += ["-O1", "-g", "-fsanitize=address,undefined",
                      "-fno-sanitize-recover=undefined", "-fno-omit-frame-pointer"]
    extra_link += ["-fsanitize=address,undefined"]
# UndefinedBehaviorSanitizer's builds compile the core's sources with signed
# overflow undefined (-fno-wrapv last, as the C tests' build does): under
# -fwrapv, which CPython's flags carry, GCC and clang drop UBSan's
# signed-integer-overflow check, and GCC takes four times as long over
# UBSan's pointer-overflow checks (csrc/cpu/kernels/conv/direct.c: 109 s
# against 22).
UBSAN_CORE_FLAGS = ["-fno-wrapv"] if sanitize and sanitize != "thread" else []
# the core's sources (not the binding's, which include Python.h) also with
# -Wextra, as the C tests' own sources are (warnings do not change the code,
# _codegen_key)
CORE_WARNINGS = ["-Wextra"]

# Every header and table of the core: a change to any rebuilds the extension
# (each object is rebuilt when it is older than its source or any of these).
core_depends = sorted(f for f in glob.glob(os.path.join("csrc", "**", "*"), recursive=True)
                      if os.path.isfile(f) and f.endswith((".h", ".def", ".inc"))
                      and os.sep + "fuzz" + os.sep not in f)
if sanitize == "fuzz":
    core_depends.append(FUZZ_IGNORELIST)

# The CPython binding (webnn/_binding/: binding.h says what each file does)
BINDING_SOURCES = sorted(glob.glob(os.path.join("webnn", "_binding", "*.c")))

core = Extension(
    "webnn._core",
    sources=core_sources + BINDING_SOURCES,
    depends=core_depends + ["webnn/_binding/binding.h", "webnn/_binding/methods.def"],
    include_dirs=["csrc/include"],
    libraries=["blis", "m", "pthread", "dl"],
    extra_compile_args=extra_compile,
    extra_link_args=extra_link,
)


# How CPython's own builds define signed overflow: 3.10-3.12 pass -fwrapv,
# 3.13 -fno-strict-overflow (GCC: -fwrapv -fwrapv-pointer). The core's sources
# are compiled with -fno-strict-overflow added, which makes the two the same
# code, so one object of the core serves every interpreter.
_OVERFLOW_FLAGS = ("-fwrapv", "-fno-strict-overflow")
CORE_OVERFLOW_FLAG = "-fno-strict-overflow"


def _codegen_key(cmd):
    """The compile command without warning flags (-W...), and with -fwrapv
    dropped where -fno-strict-overflow (which implies it) is given: objects
    compiled by commands with the same key are the same code."""
    cmd = [a for a in cmd
           if not (a.startswith("-W") and not a.startswith(("-Wl,", "-Wa,", "-Wp,")))]
    if CORE_OVERFLOW_FLAG in cmd:
        cmd = [a for a in cmd if a not in _OVERFLOW_FLAGS] + [CORE_OVERFLOW_FLAG]
    return repr(cmd)


def _parallel_incremental_compile(compiler, python_includes, depends):
    """Replaces compiler.compile: sources compiled side by side (WEBNN_BUILD_JOBS,
    default: the CPUs), and an object is kept when it is newer than its source
    and every header of the core and was compiled by the same command (warning
    flags aside; stored next to it as <obj>.cmd).  The core's own sources
    (csrc/) are compiled without the Python headers they do not use and with
    CORE_OVERFLOW_FLAG, so their objects are shared by the builds for every
    interpreter whose compiler flags differ at most in how they define
    overflow (tests/packaging/test_pythons.sh); UBSan's builds compile them
    with UBSAN_CORE_FLAGS instead."""
    import concurrent.futures

    def compile(sources, output_dir=None, macros=None, include_dirs=None, debug=0,
                extra_preargs=None, extra_postargs=None, depends=None):
        macros, objects, extra_postargs, pp_opts, build = compiler._setup_compile(
            output_dir, macros, include_dirs, sources, depends, extra_postargs)
        cc_args = compiler._get_cc_args(pp_opts, debug, extra_preargs)
        newest_dep = max((os.path.getmtime(d) for d in depends_all if os.path.exists(d)),
                         default=0.0)

        def one(obj):
            src, ext = build[obj]
            args, pp = cc_args, pp_opts
            post = list(extra_postargs)
            if os.path.normpath(src).startswith("csrc" + os.sep):
                drop = {"-I" + d for d in python_includes}
                args = [a for a in cc_args if a not in drop] + CORE_WARNINGS
                if UBSAN_CORE_FLAGS:
                    post += UBSAN_CORE_FLAGS
                else:
                    args.append(CORE_OVERFLOW_FLAG)
                pp = [a for a in pp_opts if a not in drop]
            key = _codegen_key(list(compiler.compiler_so) + args + post + [src])
            stamp = obj + ".cmd"
            if (not compiler.force and os.path.exists(obj) and os.path.exists(stamp)
                    and os.path.getmtime(obj) >= max(os.path.getmtime(src), newest_dep)):
                with open(stamp) as f:
                    if f.read() == key:
                        return
            compiler._compile(obj, src, ext, args, post, pp)
            with open(stamp, "w") as f:
                f.write(key)

        jobs = int(os.environ.get("WEBNN_BUILD_JOBS") or os.cpu_count() or 1)
        with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as ex:
            for f in [ex.submit(one, o) for o in objects]:
                f.result()
        return objects

    depends_all = list(depends)
    compiler.compile = compile


class BuildExtWithCuda(build_ext):
    """build_ext: BLIS found (or a clear message), the core (compiled in
    parallel, incrementally), then kernels_cuda/ into libwebnn_cuda.so next
    to the core."""

    def finalize_options(self):
        # One object folder for every build in the tree (make build, pip
        # wheel, setup.py by hand), not one per interpreter: the objects of
        # the core are the same for each (_parallel_incremental_compile
        # recompiles any whose command differs), and the Makefile's C
        # programs link them (CORE_TEMP).
        if self.build_temp is None:
            self.build_temp = os.path.join("build", "temp")
        super().finalize_options()

    def build_extension(self, ext):
        _parallel_incremental_compile(self.compiler, list(self.include_dirs or []),
                                      ext.depends)
        # The objects count as the extension's dependencies: one missing is
        # compiled even when the extension is newer than its sources (the
        # Makefile's C programs link them).
        objects = self.compiler.object_filenames(ext.sources, output_dir=self.build_temp)
        ext.depends = ext.depends + objects
        super().build_extension(ext)

    def run(self):
        try:
            incs, libs, rpaths = find_blis()
        except BlisNotFound as e:
            sys.stderr.write("\n" + str(e) + "\n\n")
            sys.exit("webnn: BLIS was not found (see above)")
        for ext in self.extensions:
            ext.include_dirs = ext.include_dirs + [d for d in incs if d not in ext.include_dirs]
            ext.library_dirs = ext.library_dirs + libs
            ext.runtime_library_dirs = ext.runtime_library_dirs + rpaths
        super().run()
        # the CUDA backend (kernels_cuda/build_cuda.py)
        sys.path.insert(0, os.path.join(HERE, "kernels_cuda"))
        import build_cuda
        out_dir = os.path.dirname(self.get_ext_fullpath("webnn._core"))
        build_cuda.build(os.path.join(out_dir, build_cuda.CUDA_LIB),
                         os.path.join(os.path.abspath(self.build_temp), "cuda"))


if __name__ == "__main__":
    setup(ext_modules=[core], cmdclass={"build_ext": BuildExtWithCuda})
