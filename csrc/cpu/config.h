/* config.h -- every environment switch of the CPU backend, read in one place
 * (config.c); kernels never call getenv.  Listed in README's table.
 *
 * Process-wide settings are read once per process, the first time they are
 * asked for (the pool and the thread count exist once per process):
 *   WEBNN_NUM_THREADS    threads of the pool and BLIS
 *   WEBNN_POOL_SPIN_US   how long the pool's helpers spin inside a run (default 1000)
 *   WEBNN_NT_BYTES       output size from which streaming stores are used
 *   WEBNN_CPU_ISA        avx512|avx2|baseline: caps the instruction set of
 *                        every hand-written kernel (cpu_isa(), cpu.h)
 * Kernel choices are read once per compile (build()) and stored in the
 * compiled graph, so a graph keeps the kernels it was compiled with:
 *   WEBNN_CONV_DIRECT=0    no AVX-512 direct convolution (nor Winograd):
 *                          the portable im2col + BLIS path; and matmul /
 *                          gemm on BLIS instead of the direct kernel
 *   WEBNN_CONV_WINOGRAD=0  no Winograd for 3x3 filters (direct instead)
 *   WEBNN_CONV_GATHER=0    no gathered short rows (direct.c): the direct
 *                          kernel row by row (or im2col + BLIS) instead */
#ifndef WNN_CPU_CONFIG_H
#define WNN_CPU_CONFIG_H
#include <stdbool.h>
#include <stdint.h>

/* instruction-set levels (cpu_isa(), cpu.h): x86-64 psABI levels 1 and 3
 * (AVX2, FMA, BMI2) and 4 (AVX-512 F, CD, BW, DQ, VL) */
enum { CPU_ISA_BASELINE = 1, CPU_ISA_AVX2 = 3, CPU_ISA_AVX512 = 4 };

typedef struct cpu_config {
    bool conv_direct;       /* WEBNN_CONV_DIRECT != 0   */
    bool conv_winograd;     /* WEBNN_CONV_WINOGRAD != 0 */
    bool conv_gather;       /* WEBNN_CONV_GATHER != 0   */
    bool fold_bn;           /* the context's cpu_config_fold_bn() */
} cpu_config;

/* The kernel choices, read from the environment now (at compile). */
void cpu_config_read(cpu_config *c);

/* Process-wide settings (read once). */
int cpu_num_threads(void);          /* >= 1 */
uint64_t cpu_nt_bytes(void);        /* UINT64_MAX - 1: never */
uint64_t cpu_pool_spin_ns(void);
/* The level WEBNN_CPU_ISA caps cpu_isa() to (CPU_ISA_*; CPU_ISA_AVX512:
 * no cap).  Read by cpu_isa() once per process. */
int cpu_config_isa_cap(void);
/* WEBNN_CPU_FUSION=0: the CPU backend fuses nothing (read when a context's
 * backend is created) */
bool cpu_config_fusion(void);
/* WEBNN_CPU_CONV_PAIRS=0: no conv pairs (1x1 + depthwise in one pass,
 * kernels/conv/pair.c) while fusion is on (read when a context's backend is
 * created) */
bool cpu_config_conv_pairs(void);
/* WEBNN_CPU_LAYOUT=0: no layout planning (read when a context's backend is
 * created) */
bool cpu_config_layout(void);
/* WEBNN_CPU_FOLD_BN=0: a batchNormalization after a conv2d with constant
 * parameters stays in the chain's epilogue instead of being folded into the
 * filter and bias (backend_cpu.c, fold_bn; read when a context's backend is
 * created) */
bool cpu_config_fold_bn(void);
/* WEBNN_CPU_IN_SCALE=0: a conv2d reading x * s (s per input channel: a
 * squeeze-and-excitation block's scale) runs after the mul, as the graph
 * writes it, instead of as conv(x, W diag(s)) (backend_cpu.c,
 * apply_in_scale; read when a context's backend is created) */
bool cpu_config_in_scale(void);
/* WEBNN_CPU_EPI_PROGRAM=0: no epilogue programs (WNN_FUSE_EPI_PROG: the
 * element-wise nodes after a producer's add that read its result and
 * constant scalars only run as an element-wise chain instead; read when a
 * context's backend is created) */
bool cpu_config_epi_prog(void);
/* WEBNN_CPU_INT8=0: quantized regions (dequantizeLinear -> conv2d /
 * matmul / gemm -> quantizeLinear) run as their float operators instead of
 * one integer step (qdq.c; read when a context's backend is created) */
bool cpu_config_int8(void);
/* WEBNN_CPU_ATTENTION=0: attention blocks (matmul -> [add mask] -> softmax
 * -> [NaN guard] -> matmul) run as their operators instead of one step
 * (attention.c; read when a context's backend is created) */
bool cpu_config_attention(void);
/* WEBNN_CPU_VM_TWINS=0: exp, sigmoid, gelu, tanh, erf and x sigmoid(x)
 * run the loops the compiler vectorises from vmath.h at every level, not
 * their intrinsics twins (vloops.c), which tests compare bit for bit with
 * those loops at the same level (read once per process) */
bool cpu_config_vm_twins(void);

#endif
