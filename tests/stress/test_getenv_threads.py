"""No getenv on a context's own threads.

getenv is not safe against a setenv on another thread (setenv may move the
environment while getenv walks it), and Python's ``os.environ[k] = v`` is a
setenv: a caller that sets a variable while a context's timeline thread or
the CPU pool reads a switch for the first time could crash.  So every switch
a kernel or the timeline reads is read when a context is created, on the
creating thread (cpu_config_prime, wnn_timeline_prime, BLIS's bli_init).

The test preloads a getenv that records each call made from webnn's library
(or BLIS) on any thread but the main one, runs graphs that start every
lazily configured part (the pool, the vector-math twins, streamed stores,
BLIS, the timeline's merged reads, a second context) and expects no record."""
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_t main_thread;
static char *(*real_getenv)(const char *);
static FILE *report;

__attribute__((constructor)) static void
shim_init(void)
{
    main_thread = pthread_self();
    real_getenv = (char *(*)(const char *))dlsym(RTLD_NEXT, "getenv");
    const char *path = real_getenv("GETENV_SHIM_REPORT");
    report = path ? fopen(path, "w") : NULL;
}

char *
getenv(const char *name)
{
    if (!real_getenv) {
        real_getenv = (char *(*)(const char *))dlsym(RTLD_NEXT, "getenv");
    }
    if (report && !pthread_equal(pthread_self(), main_thread)) {
        Dl_info info;
        void *caller = __builtin_return_address(0);
        if (dladdr(caller, &info) && info.dli_fname &&
            (strstr(info.dli_fname, "webnn") || strstr(info.dli_fname, "blis"))) {
            fprintf(report, "%s from %s\n", name, info.dli_fname);
            fflush(report);
        }
    }
    return real_getenv(name);
}
"""

CHILD = textwrap.dedent("""
    import numpy as np, webnn
    rng = np.random.default_rng(0)
    ctx = webnn.ml.create_context(device_type="cpu")
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float32", "shape": [64, 256]})
    img = b.input("img", {"dataType": "float32", "shape": [1, 16, 16, 8]})
    w = b.constant(rng.standard_normal((256, 96)).astype(np.float32))
    f = b.constant(rng.standard_normal((3, 3, 8, 16)).astype(np.float32))
    big = b.input("big", {"dataType": "float32", "shape": [5 << 20]})
    outs = {
        "mm": b.softmax(b.matmul(x, w), 1),
        "mt": b.matmul(b.transpose(x), x),            # BLIS (no constant B)
        "cv": b.sigmoid(b.conv2d(img, f, input_layout="nhwc", filter_layout="hwio")),
        "gl": b.gelu(b.tanh(x)),
        "ex": b.exp(big),                             # streamed stores
        "cp": b.add(big, big),
    }
    g = b.build(outs)
    feeds = {"x": rng.standard_normal((64, 256)).astype(np.float32),
             "img": rng.standard_normal((1, 16, 16, 8)).astype(np.float32),
             "big": rng.standard_normal(5 << 20).astype(np.float32)}
    for _ in range(3):
        ctx.compute(g, feeds)
    tx = ctx.create_tensor({"dataType": "float32", "shape": [64, 256], "writable": True})
    ty = ctx.create_tensor({"dataType": "float32", "shape": [64, 96], "readable": True})
    b2 = webnn.MLGraphBuilder(ctx)
    g2 = b2.build({"y": b2.matmul(b2.input("x", {"dataType": "float32", "shape": [64, 256]}), b2.constant(rng.standard_normal((256, 96)).astype(np.float32)))})
    for _ in range(20):
        ctx.write_tensor(tx, feeds["x"])
        ctx.dispatch(g2, {"x": tx}, {"y": ty})
        ctx.read_tensor(ty)
    ctx2 = webnn.ml.create_context(device_type="cpu")
    b3 = webnn.MLGraphBuilder(ctx2)
    g3 = b3.build({"y": b3.relu(b3.input("x", {"dataType": "float32", "shape": [1 << 20]}))})
    ctx2.compute(g3, {"x": np.ones(1 << 20, np.float32)})
    print("ok")
""")


def test_no_getenv_on_the_context_threads(tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build the getenv shim")
    if os.environ.get("LD_PRELOAD"):
        pytest.skip("LD_PRELOAD is taken (a sanitizer run)")
    shim = tmp_path / "getenv_shim.so"
    src = tmp_path / "getenv_shim.c"
    src.write_text(SHIM)
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(shim), str(src), "-ldl",
                    "-lpthread"], check=True)
    report = tmp_path / "report.txt"
    env = dict(os.environ, LD_PRELOAD=str(shim), GETENV_SHIM_REPORT=str(report),
               OPENBLAS_NUM_THREADS="1")
    r = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]
    calls = sorted(set(report.read_text().splitlines()))
    assert calls == [], calls
