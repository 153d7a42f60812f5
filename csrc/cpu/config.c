/* config.c -- the CPU backend's environment switches (config.h), the only
 * getenv calls of csrc/cpu. */
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"

static bool
env_off(const char *name)
{
    const char *e = getenv(name);
    return e && e[0] == '0';
}

void
cpu_config_read(cpu_config *c)
{
    c->conv_direct = !env_off("WEBNN_CONV_DIRECT");
    c->conv_winograd = !env_off("WEBNN_CONV_WINOGRAD");
    c->conv_gather = !env_off("WEBNN_CONV_GATHER");
}

bool
cpu_config_fusion(void)
{
    return !env_off("WEBNN_CPU_FUSION");
}

bool
cpu_config_conv_pairs(void)
{
    return !env_off("WEBNN_CPU_CONV_PAIRS");
}

bool
cpu_config_attention(void)
{
    return !env_off("WEBNN_CPU_ATTENTION");
}

bool
cpu_config_vm_twins(void)
{
    static atomic_int v = 0; /* 0: not read; 1: on; 2: off */
    int x = atomic_load_explicit(&v, memory_order_relaxed);
    if (x == 0) {
        x = env_off("WEBNN_CPU_VM_TWINS") ? 2 : 1;
        atomic_store_explicit(&v, x, memory_order_relaxed);
    }
    return x == 1;
}

bool
cpu_config_fold_bn(void)
{
    return !env_off("WEBNN_CPU_FOLD_BN");
}

bool
cpu_config_epi_prog(void)
{
    return !env_off("WEBNN_CPU_EPI_PROGRAM");
}

bool
cpu_config_in_scale(void)
{
    return !env_off("WEBNN_CPU_IN_SCALE");
}

bool
cpu_config_int8(void)
{
    return !env_off("WEBNN_CPU_INT8");
}

bool
cpu_config_layout(void)
{
    return !env_off("WEBNN_CPU_LAYOUT");
}

/* WEBNN_NUM_THREADS when set (1 to 1024), else the CPUs this process may
 * run on (its affinity mask, which taskset and containers narrow), else the
 * CPUs online. */
int
cpu_num_threads(void)
{
    static atomic_int n = 0;
    int v = atomic_load_explicit(&n, memory_order_relaxed);
    if (v == 0) {
        long c = 0;
        const char *e = getenv("WEBNN_NUM_THREADS");
        if (e && *e) {
            char *end;
            long x = strtol(e, &end, 10);
            if (*end == '\0' && x >= 1 && x <= 1024) {
                c = x;
            }
        }
#ifdef CPU_COUNT
        if (c == 0) {
            cpu_set_t set;
            if (sched_getaffinity(0, sizeof(set), &set) == 0) {
                c = CPU_COUNT(&set);
            }
        }
#endif
        if (c <= 0) {
            c = sysconf(_SC_NPROCESSORS_ONLN);
        }
        v = c > 0 ? (int)c : 1;
        atomic_store_explicit(&n, v, memory_order_relaxed);
    }
    return v;
}

/* WEBNN_NT_BYTES: default 16 MiB, 0: never (UINT64_MAX - 1). */
uint64_t
cpu_nt_bytes(void)
{
    static _Atomic uint64_t v = UINT64_MAX;
    uint64_t x = atomic_load_explicit(&v, memory_order_relaxed);
    if (x == UINT64_MAX) {
        const char *e = getenv("WEBNN_NT_BYTES");
        x = (uint64_t)16 << 20;
        if (e && *e) {
            char *end;
            unsigned long long u = strtoull(e, &end, 10);
            if (*end == '\0') {
                x = u == 0 ? UINT64_MAX - 1 : u;
            }
        }
        atomic_store_explicit(&v, x, memory_order_relaxed);
    }
    return x;
}

/* WEBNN_POOL_SPIN_US: default 1000 us (pool.c says why; read once; the
 * pool takes it when it starts). */
uint64_t
cpu_pool_spin_ns(void)
{
    static _Atomic uint64_t v = UINT64_MAX;
    uint64_t x = atomic_load_explicit(&v, memory_order_relaxed);
    if (x == UINT64_MAX) {
        const char *s = getenv("WEBNN_POOL_SPIN_US");
        x = s && *s ? (uint64_t)strtoull(s, NULL, 10) * 1000u : 1000000;
        x = x == UINT64_MAX ? UINT64_MAX - 1 : x;
        atomic_store_explicit(&v, x, memory_order_relaxed);
    }
    return x;
}


/* WEBNN_CPU_ISA=avx512|avx2|baseline (anything else: no cap) */
int
cpu_config_isa_cap(void)
{
    const char *cap = getenv("WEBNN_CPU_ISA");
    if (cap && strcmp(cap, "avx2") == 0) {
        return CPU_ISA_AVX2;
    }
    if (cap && strcmp(cap, "baseline") == 0) {
        return CPU_ISA_BASELINE;
    }
    return CPU_ISA_AVX512;
}
