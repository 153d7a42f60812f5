"""One kernel ABI (docs/architecture.md, "The kernel ABI"): the parameter
blocks every backend's kernels read are defined once, in
csrc/include/wnn_kernel_abi.h (plain C, no core include, read by the C
compiler and by nvcc / the C++ compiler); the CUDA launchers take them as
the core's lowering made them (no kernels_cuda look-alike structs, no
cu_prep.c copying them); the scalar numerics the CPU and CUDA kernels share
are defined once, in csrc/include/wnn_numerics.h."""
import pathlib
import re
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CSRC = ROOT / "csrc"
KCUDA = ROOT / "kernels_cuda"
ABI = CSRC / "include" / "wnn_kernel_abi.h"
NUM = CSRC / "include" / "wnn_numerics.h"

_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


def _sources():
    out = []
    for d in (CSRC, KCUDA):
        for ext in ("*.c", "*.h", "*.cu", "*.cuh"):
            out += [p for p in d.rglob(ext) if "blis" not in p.parts]
    assert len(out) > 100, "no sources found"
    return out


def _code(p):
    return _COMMENT.sub(" ", p.read_text())


def test_no_cuda_mirror_structs_and_no_cu_prep():
    hits = [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in _sources()
            for m in re.finditer(r"\bck_[a-z_]*_p\b", p.read_text())]
    assert not hits, "ck_*_p mirror structs of the lowered blocks: " + ", ".join(hits)
    assert not (KCUDA / "cu_prep.c").exists()
    assert (KCUDA / "cu_ops.c").exists()


def test_the_abi_header_includes_only_stdint_and_stdbool():
    inc = re.findall(r"^\s*#\s*include\s*([<\"][^>\"]+[>\"])", ABI.read_text(), re.M)
    assert sorted(inc) == ["<stdbool.h>", "<stdint.h>"], inc
    # the numerics: system headers and the ABI header only
    inc = re.findall(r"^\s*#\s*include\s*([<\"][^>\"]+[>\"])", NUM.read_text(), re.M)
    assert [i for i in inc if i.startswith('"')] == ['"wnn_kernel_abi.h"'], inc


def _struct_defs():
    """{type name: [files]} of every `typedef struct NAME {` / `struct NAME {`."""
    out = {}
    for p in _sources():
        for m in re.finditer(r"\bstruct\s+([A-Za-z_]\w*)\s*\{", _code(p)):
            out.setdefault(m.group(1), []).append(p.relative_to(ROOT).as_posix())
    return out


def test_the_parameter_blocks_are_defined_once_in_the_abi_header():
    defs = _struct_defs()
    abi = "csrc/include/wnn_kernel_abi.h"
    names = re.findall(r"\bstruct\s+(wnn_\w+)\s*\{", _code(ABI))
    for must in ("wnn_broadcast_params", "wnn_conv_params", "wnn_pool_params",
                 "wnn_reduce_params", "wnn_norm_params", "wnn_axis_params",
                 "wnn_gather_params", "wnn_quant_params", "wnn_view",
                 "wnn_views_params", "wnn_pad_params", "wnn_matmul_params",
                 "wnn_gemm_params", "wnn_lowered", "wnn_scalar_params",
                 "wnn_kernel_args", "wnn_epi_params", "wnn_rnn_params"):
        assert must in names, must
    for n in names:
        assert defs[n] == [abi], f"{n} defined in {defs[n]}"
    # lower.h takes them from the ABI header
    lower = _code(CSRC / "compiler" / "lower" / "lower.h")
    assert "wnn_kernel_abi.h" in lower and not re.search(r"\bstruct\s+wnn_\w+\s*\{", lower)


def _launchers():
    text = _code(KCUDA / "cuda_kernels.h")
    return dict(re.findall(r"cudaError_t\s+(ck_\w+)\s*\(([^)]*)\)", text))


def test_the_launchers_take_the_abi_types():
    launchers = _launchers()
    assert len(launchers) >= 25, sorted(launchers)
    for name, params in launchers.items():
        types = set(re.findall(r"\b(wnn_\w+|ck_\w+)\s*\*", params))
        assert not {t for t in types if t.startswith("ck_")}, (name, params)
    # the lowered blocks themselves, not copies
    for name, block in (("ck_binary", "wnn_broadcast_params"), ("ck_where", "wnn_broadcast_params"),
                        ("ck_conv2d", "wnn_conv_params"), ("ck_pool2d", "wnn_pool_params"),
                        ("ck_reduce", "wnn_reduce_params"), ("ck_norm", "wnn_norm_params"),
                        ("ck_softmax", "wnn_axis_params"), ("ck_gather", "wnn_gather_params"),
                        ("ck_quantize", "wnn_quant_params"), ("ck_copy_view", "wnn_view"),
                        ("ck_pad", "wnn_pad_params"), ("ck_batch_pointers", "wnn_matmul_params")):
        assert re.search(r"\b%s\s*\*" % block, launchers[name]), (name, launchers[name])


# the functions of wnn_numerics.h that replaced copies on both sides
_SHARED = ("wnn_exp_core", "wnn_exp", "wnn_sigmoid_core", "wnn_tanh_cephes",
           "wnn_f32_to_int_sat", "wnn_f32_to_u64_sat", "wnn_quantize_value",
           "wnn_saturate", "wnn_dequantize_value", "wnn_f64_to_f32_odd",
           "wnn_round_clamp", "wnn_load_num", "wnn_ipow", "wnn_upow",
           "wnn_exp_nonpos", "wnn_two_diff", "wnn_resample_src", "wnn_f64_to_f16")


def test_each_shared_numeric_is_defined_once_and_used_by_both_sides():
    num = _code(NUM)
    for f in _SHARED:
        assert re.search(r"^%s\(" % f, num, re.M), f"{f} not in wnn_numerics.h"
    cpu = [p for p in (CSRC / "cpu").rglob("*.[ch]")]
    cuda = list(KCUDA.glob("*.cu")) + list(KCUDA.glob("*.cuh"))
    used = {f: [False, False] for f in _SHARED}
    for side, files in enumerate((cpu, cuda)):
        for p in files:
            code = _code(p)
            for f in _SHARED:
                assert not re.search(r"^%s\(" % f, code, re.M), f"{f} defined again in {p}"
                if re.search(r"\b%s\(" % f, code):
                    used[f][side] = True
    # on both sides: wnn_exp_core through wnn_exp / wnn_sigmoid_core /
    # wnn_tanh_cephes, wnn_f64_to_f32_odd through wnn_f64_to_f16; wnn_exp
    # only on CUDA (the CPU's exp is vmath.h's vectorised vm_exp)
    for f, (c, g) in used.items():
        if f in ("wnn_exp_core", "wnn_f64_to_f32_odd"):
            continue
        assert g, f"{f} unused by the CUDA kernels"
        assert c or f == "wnn_exp", f"{f} unused by the CPU kernels"
    # the copies that were: no other definition of the Cephes exp core or
    # tanh polynomial outside the numerics header and vmath's SIMD forms
    for p in _sources():
        if p in (NUM,) or p.name.startswith("vmath"):
            continue
        code = _code(p)
        for const in ("1.9875691500E-4f", "5.70498872745E-3f", "18446744073709551616.0f"):
            assert const not in code, f"{const} (a shared numeric's) in {p.relative_to(ROOT)}"


@pytest.mark.parametrize("lang", ["c", "c++"])
def test_the_abi_and_numerics_headers_compile_alone(lang, tmp_path):
    cc = shutil.which("gcc" if lang == "c" else "g++")
    if not cc:
        pytest.skip("no compiler")
    src = tmp_path / ("t.c" if lang == "c" else "t.cpp")
    src.write_text('#include "wnn_kernel_abi.h"\n#include "wnn_numerics.h"\n'
                   "int main(void) { wnn_lowered l; wnn_kernel_args k; (void)l; (void)k;\n"
                   "  return wnn_exp_core(0.0f) == 1.0f && wnn_saturate(300.0, 0.0, 255.0) == 255.0"
                   " && wnn_f32_to_int_sat(-1e30f, WNN_KDT_I8) == -128 ? 0 : 1; }\n")
    exe = tmp_path / "t"
    std = ["-std=c11"] if lang == "c" else ["-std=c++17"]
    r = subprocess.run([cc, *std, "-Wall", "-Werror", "-I", str(CSRC / "include"), str(src),
                        "-o", str(exe), "-lm"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert subprocess.run([str(exe)]).returncode == 0


# the blocks every lowering fills, the options structs the lowering reads
# to fill them: outside compiler/lower/ (and ops/, which defines and checks
# them) no backend file may read those options again
_LOWERED_FROM = {
    "tri": ("wnn_tri_params", ["wnn_triangular_options"]),
    "resample": ("wnn_resample_params", ["wnn_resample2d_options"]),
    "rnn": ("wnn_rnn_params", ["wnn_gru_options", "wnn_gru_cell_options",
                               "wnn_lstm_options", "wnn_lstm_cell_options"]),
}


def test_triangular_resample_and_recurrent_are_read_from_their_lowered_blocks():
    backends = [p for p in _sources()
                if "ops" not in p.relative_to(ROOT).parts[:2]
                and "lower" not in p.parts]
    for member, (block, options) in _LOWERED_FROM.items():
        abi = _code(ABI)
        assert re.search(rf"\b{block}\s+{member};", abi), f"wnn_lowered has no {member}"
        for p in backends:
            code = _code(p)
            used = [o for o in options if re.search(rf"\b{o}\b", code)]
            assert not used, f"{p.relative_to(ROOT)} derives {block} from {used}"
        # both backends read the lowered block as the lowering made it
        cpu = "".join(_code(p) for p in (CSRC / "cpu" / "kernels").rglob("*.c"))
        # (the CUDA run launchers take it as cu_launch_args.l: a->l->u.*)
        cuda = "".join(_code(p) for p in list(KCUDA.glob("*.c")) + list(KCUDA.glob("*.cu")))
        assert re.search(rf"lowered->u\.{member}\b", cpu), member
        assert re.search(rf"(?:lowered|\ba->l)->u\.{member}\b", cuda), member
        # and no backend keeps a block of that type of its own
        hits = [str(p.relative_to(ROOT)) for p in backends
                if re.search(rf"\b{block}\s+\w+\s*;", _code(p)) and p != ABI]
        assert not hits, f"{block} held outside g->lowered: {hits}"


def test_the_epilogue_extents_are_the_schedules():
    # n, C, inner of a chain's epilogue: computed once (schedule.c), read by
    # the CPU's cpu_epi and the CUDA backend's wnn_epi_params
    sched = _code(CSRC / "compiler" / "schedule.c")
    assert re.search(r"st->epi_inner\s*\*=", sched) and "st->epi_c =" in sched
    launch = _code(KCUDA / "cu_launch.c")
    assert re.search(r"ep->C\s*=\s*st->epi_c;", launch)
    assert re.search(r"ep->inner\s*=\s*st->epi_inner;", launch)
    assert "cu_prod(od->shape" not in launch
    cpu = _code(CSRC / "cpu" / "backend_cpu.c")
    assert re.search(r"\.C\s*=\s*s->epi_c", cpu) and re.search(r"\.inner\s*=\s*s->epi_inner", cpu)
    epi = _code(CSRC / "cpu" / "epilogue.c")
    assert "channel_axis" not in epi, "cpu/epilogue.c derives the extents again"
