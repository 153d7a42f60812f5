/* cpu.h -- what CPU kernels see.  A kernel gets one cpu_call: the node (op,
 * options), and the descriptors and memory of its inputs and outputs.  The
 * cpu column of ops/ops.def names the kernel of each operator; a kernel
 * switches on data type itself. */
#ifndef WNN_CPU_H
#define WNN_CPU_H
#include "../core/internal.h"
#include "../ops/options.h"

typedef struct cpu_call {
    const wnn_node *node;
    const void *options;
    uint32_t n_in, n_out;
    const wnn_desc *in_desc;   /* n_in descriptors  */
    const void *const *in;     /* n_in pointers     */
    const wnn_desc *out_desc;  /* n_out descriptors */
    void *const *out;          /* n_out pointers    */
} cpu_call;

typedef wnn_status (*cpu_kernel)(const cpu_call *k, wnn_error *err);

#define WNN_OP(ID, camel, snake, sig, opts, check, limits, cpu) \
    wnn_status cpu(const cpu_call *k, wnn_error *err);
#include "../ops/ops.def"
#undef WNN_OP

/* Work below this many elements runs on one thread. */
#define CPU_PARALLEL_MIN 32768
int cpu_num_threads(void);

/* kernel errors name the node's operator and label */
wnn_status cpu_fail(const cpu_call *k, wnn_error *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
