"""The direct kernels at AVX2 + FMA against the AVX-512 ones, bit for bit.

csrc/cpu/kernels/conv/direct.c compiles the same micro-kernel at both levels
(16-lane vectors of output channels; at AVX2 two 8-lane halves, in blocks of
one vector by up to 6 pixels, wider blocks run vector by vector) over the
same packed weights: every output is the same sum in the same order, so the
results must be identical -- where im2col + BLIS ran (AVX2, before), they
differed in the last bits.  (Until 2026-11-29 the AVX2 1x1 product of more
than 8 rows sliced more than 512 input channels, which summed in another
order; the cases of matmul rows > 8 with k 576 and a 1x1 convolution of 600
channels, checked against the reference only then, must now match too.)
Each case runs in a subprocess per level
(WEBNN_CPU_ISA is read once per process), with Winograd and the conv pairs
off (a second test runs Winograd F(2x2, 3x3), at both levels since its
transforms have an AVX2 build, on the 3x3 cases and CONV_WINO's), and is
checked against NumPy in float64 too.

The cases: nhwc 1x1 convolutions with output channels that are not
multiples of 16 (a partial last vector), 24 channels (the 16 + 8 lane
kernels at AVX-512), a residual add + relu or clamp applied in registers, a
large output (streaming stores), 3x3 with padding, strides and dilation on
rows of 16 and more pixels, grouped convolutions, 3x3 depthwise ones (dw3_k.h
at 16 and 8 lanes; 24, 40 and 20 channels: vectors of 8 after the 16s, a
scalar tail), nchw 1x1 and 3x3; matmul
and gemm with constant weights from 1 to 100 rows (the decode step's
few-row product and the 1x1 product), with a bias.
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

if __name__ != "__main__":  # (the children run this file as a script)
    from .conftest import cpu_runs_avx512

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CONV = [
    # name, (N, H, W, C), (O, KH, KW), strides, dilations, pads, groups, layout, epi
    ("1x1 40", (1, 20, 20, 32), (40, 1, 1), 1, 1, 0, 1, "nhwc", None),
    ("1x1 24", (2, 17, 19, 16), (24, 1, 1), 1, 1, 0, 1, "nhwc", "relu"),
    ("1x1 64 res", (1, 14, 14, 48), (64, 1, 1), 1, 1, 0, 1, "nhwc", "res_relu"),
    ("1x1 200 clamp", (1, 9, 11, 72), (200, 1, 1), 1, 1, 0, 1, "nhwc", "clamp"),
    ("1x1 large", (1, 96, 96, 64), (256, 1, 1), 1, 1, 0, 1, "nhwc", None),
    ("1x1 600 channels", (1, 12, 13, 600), (80, 1, 1), 1, 1, 0, 1, "nhwc", "res_relu"),
    ("3x3 pad", (1, 20, 24, 19), (33, 3, 3), 1, 1, 1, 1, "nhwc", "res_relu"),
    ("3x3 s2", (1, 40, 40, 16), (64, 3, 3), 2, 1, 1, 1, "nhwc", None),
    # strided onto 7 columns: the direct kernel at AVX2 too (narrower rows
    # of stride 1 take im2col + BLIS there)
    ("3x3 s2 7 cols", (1, 14, 14, 40), (48, 3, 3), 2, 1, 1, 1, "nhwc", "relu"),
    ("3x3 dil2", (1, 24, 24, 8), (16, 3, 3), 1, 2, 2, 1, "nhwc", "relu"),
    ("5x5", (1, 20, 20, 3), (32, 5, 5), 1, 1, 2, 1, "nhwc", None),
    ("grouped", (1, 20, 20, 32), (48, 3, 3), 1, 1, 1, 4, "nhwc", None),
    ("dw3 24", (1, 20, 20, 24), (24, 3, 3), 1, 1, 1, 24, "nhwc", "clamp"),
    ("dw3 s2 40", (1, 21, 21, 40), (40, 3, 3), 2, 1, 1, 40, "nhwc", None),
    ("dw3 7x7 20", (1, 7, 7, 20), (20, 3, 3), 1, 1, 1, 20, "nhwc", "relu"),
    ("nchw 1x1", (1, 15, 15, 40), (72, 1, 1), 1, 1, 0, 1, "nchw", "relu"),
    ("nchw 3x3", (1, 18, 18, 16), (40, 3, 3), 1, 1, 1, 1, "nchw", None),
]
# Winograd F(2x2, 3x3) (on in test_winograd_matches_across_levels only): 3x3
# filters, strides 1, 48 tiles and more; at AVX2 also on rows narrower than
# the direct kernel's (14 x 14), where the convolution otherwise runs
# im2col + BLIS
CONV_WINO = [
    ("wino 14x14", (1, 14, 14, 32), (48, 3, 3), 1, 1, 1, 1, "nhwc", "relu"),
    ("wino 28x28", (1, 28, 28, 24), (40, 3, 3), 1, 1, 1, 1, "nhwc", "res_relu"),
]
MATMUL = [(m, k, n) for m in (1, 2, 5, 8, 9, 33, 100) for k, n in ((64, 40), (300, 200), (576, 580))]


def _child():
    """run every case at this process's level; results to the .npz in argv"""
    import webnn
    ctx = webnn.ml.create_context(device_type="cpu")
    out, ref = {}, {}
    cases = CONV + (CONV_WINO if os.environ.get("WEBNN_CONV_WINOGRAD") != "0" else [])
    for i, (name, xs, ws, s, d, p, g, lay, epi) in enumerate(cases):
        rng = np.random.default_rng(100 + i)
        N, H, W, C = xs
        O, KH, KW = ws
        x = rng.uniform(-1, 1, (N, H, W, C)).astype(np.float32)
        w = rng.uniform(-1, 1, (O, KH, KW, C // g)).astype(np.float32)
        bias = rng.uniform(-1, 1, O).astype(np.float32)
        OH = (H + 2 * p - d * (KH - 1) - 1) // s + 1
        OW = (W + 2 * p - d * (KW - 1) - 1) // s + 1
        r = rng.uniform(-1, 1, (N, OH, OW, O)).astype(np.float32)
        b = webnn.MLGraphBuilder(ctx)
        xin = x if lay == "nhwc" else x.transpose(0, 3, 1, 2).copy()
        xi = b.input("x", {"dataType": "float32", "shape": list(xin.shape)})
        wc = w if lay == "nhwc" else w.transpose(0, 3, 1, 2).copy()
        y = b.conv2d(xi, b.constant(wc), bias=b.constant(bias), strides=[s, s], dilations=[d, d],
                     padding=[p] * 4, groups=g, input_layout=lay,
                     filter_layout="ohwi" if lay == "nhwc" else "oihw")
        rin = r if lay == "nhwc" else r.transpose(0, 3, 1, 2).copy()
        if epi == "res_relu":
            y = b.relu(b.add(y, b.constant(rin)))
        elif epi == "relu":
            y = b.relu(y)
        elif epi == "clamp":
            y = b.clamp(y, min_value=-0.5, max_value=0.75)
        got = ctx.compute(b.build({"y": y}), {"x": xin})["y"]
        out[f"conv{i}"] = got if lay == "nhwc" else got.transpose(0, 2, 3, 1)
        # float64 reference
        xp = np.pad(x.astype(np.float64), ((0, 0), (p, p), (p, p), (0, 0)))
        acc = np.zeros((N, OH, OW, O))
        Cg, Og = C // g, O // g
        for gi in range(g):
            for kh in range(KH):
                for kw in range(KW):
                    patch = xp[:, kh * d:kh * d + s * (OH - 1) + 1:s, kw * d:kw * d + s * (OW - 1) + 1:s,
                               gi * Cg:(gi + 1) * Cg]
                    acc[..., gi * Og:(gi + 1) * Og] += patch @ w[gi * Og:(gi + 1) * Og, kh, kw, :].astype(np.float64).T
        acc += bias
        if epi == "res_relu":
            acc = np.maximum(acc + r, 0)
        elif epi == "relu":
            acc = np.maximum(acc, 0)
        elif epi == "clamp":
            acc = np.clip(acc, -0.5, 0.75)
        ref[f"conv{i}"] = acc
    for i, (m, k, n) in enumerate(MATMUL):
        rng = np.random.default_rng(200 + i)
        a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
        w = rng.uniform(-1, 1, (k, n)).astype(np.float32)
        c = rng.uniform(-1, 1, n).astype(np.float32)
        b = webnn.MLGraphBuilder(ctx)
        ai = b.input("a", {"dataType": "float32", "shape": [m, k]})
        mm = b.matmul(ai, b.constant(w))
        gm = b.gemm(ai, b.constant(w), c=b.constant(c))
        res = ctx.compute(b.build({"mm": mm, "gm": gm}), {"a": a})
        out[f"mm{i}"], out[f"gm{i}"] = res["mm"], res["gm"]
        ref[f"mm{i}"] = a.astype(np.float64) @ w.astype(np.float64)
        ref[f"gm{i}"] = ref[f"mm{i}"] + c
    np.savez(sys.argv[2], **out)
    np.savez(sys.argv[3], **ref)


def _run(tmp_path, isa, winograd=False):
    env = dict(os.environ, WEBNN_CPU_ISA=isa, WEBNN_CONV_WINOGRAD="1" if winograd else "0",
               WEBNN_CPU_CONV_PAIRS="0",
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    tag = isa + ("-wino" if winograd else "")
    got, ref = tmp_path / f"{tag}.npz", tmp_path / f"{tag}-ref.npz"
    subprocess.run([sys.executable, __file__, "child", str(got), str(ref)], env=env, check=True,
                   timeout=600)
    return np.load(got), np.load(ref)


@pytest.mark.skipif(__name__ == "__main__" or not cpu_runs_avx512(), reason="needs an AVX-512 CPU to compare the two levels (make "
                                          "test-isa runs the AVX2 path against NumPy elsewhere)")
def test_avx2_kernels_match_avx512_bit_for_bit(tmp_path):
    _compare(*_run(tmp_path, "avx512"), _run(tmp_path, "avx2")[0])


@pytest.mark.skipif(__name__ == "__main__" or not cpu_runs_avx512(), reason="needs an AVX-512 CPU to compare the two levels")
def test_winograd_matches_across_levels(tmp_path):
    """Winograd's transforms compiled at both levels (winograd_k.h) and its
    products on each level's micro-kernels: the same bits, the 3x3 cases
    above and CONV_WINO's included."""
    _compare(*_run(tmp_path, "avx512", True), _run(tmp_path, "avx2", True)[0])


def _compare(a512, ref, a2):
    bad = []
    for key in ref.files:
        r = ref[key]
        for lvl, got in (("avx512", a512[key]), ("avx2", a2[key])):
            # K-term dot product bound (test_matmul.py's), loosely
            tol = 4e-6 * max(1.0, float(np.max(np.abs(r)))) * 64
            if not np.allclose(got, r, rtol=0, atol=tol):
                bad.append(f"{key} at {lvl}: max error {np.max(np.abs(got - r)):.3g}")
        if a512[key].tobytes() != a2[key].tobytes():
            diff = np.argwhere(a512[key] != a2[key])
            bad.append(f"{key}: AVX2 differs from AVX-512 in {len(diff)} elements, first at {diff[0].tolist()}")
    assert not bad, "\n".join(bad)


if __name__ == "__main__" and len(sys.argv) == 4 and sys.argv[1] == "child":
    _child()
