"""How long `import webnn` takes, NumPy already imported (target < 0.2 s),
each time in a fresh interpreter; and that no GPU library is loaded by it.

    python benchmarks/bench_import.py [-n 10]

Prints the median, the best and the worst of n runs, and the same for
`import numpy` alone for scale; `python -X importtime -c 'import webnn'` breaks
the time down by module."""
import argparse
import os
import statistics
import subprocess
import sys

CODE = """
import time
t0 = time.perf_counter()
import numpy
t1 = time.perf_counter()
import webnn
t2 = time.perf_counter()
maps = open("/proc/self/maps").read()
gpu = any(n in maps for n in ("libwebnn_cuda", "libcudart", "libcublas", "libcudnn"))
print(t1 - t0, t2 - t1, int(gpu))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=10)
    n = ap.parse_args().n
    np_t, wnn_t = [], []
    for _ in range(n):
        out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True,
                             check=True, cwd=os.getcwd()).stdout.split()
        np_t.append(float(out[0]))
        wnn_t.append(float(out[1]))
        assert out[2] == "0", "import webnn loaded a GPU library"
    for name, ts in (("import numpy", np_t), ("import webnn (numpy imported)", wnn_t)):
        print(f"{name:32s} median {statistics.median(ts) * 1e3:7.1f} ms   "
              f"best {min(ts) * 1e3:7.1f} ms   worst {max(ts) * 1e3:7.1f} ms")
    print("no GPU library loaded by the import")
    med = statistics.median(wnn_t)
    print(f"target < 200 ms: {'met' if med < 0.2 else 'NOT met'} ({med * 1e3:.1f} ms)")


if __name__ == "__main__":
    main()
