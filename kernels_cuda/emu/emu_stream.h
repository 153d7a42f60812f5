/* emu_stream.h -- the emulated CUDA stream (emu/cuda_emu.c), shared with the
 * emulated cuDNN (emu/cudnn_emu.c, its own shared object, which reaches the
 * runtime only through the stream its handle was given) and the kernels
 * compiled for the CPU (ck_host_emu.h).  Work queued on a stream runs at
 * once, except while the stream captures a CUDA graph
 * (cudaStreamBeginCapture): then each piece of work is recorded as a
 * closure (run, drop, arg) that cudaGraphLaunch runs, in order, as the GPU
 * would replay the graph's nodes.  A closure holds its arguments as they
 * were when it was queued (kernel parameters and GEMM scalars by value,
 * device pointers as pointers), so a replay reads the memory's contents at
 * replay time, not at capture. */
#ifndef WNN_EMU_STREAM_H
#define WNN_EMU_STREAM_H
#include <stddef.h>

#define EMU_STREAM_MAGIC 0x57535452u

typedef struct emu_op {
    void (*run)(void *arg);
    void (*drop)(void *arg); /* frees arg */
    void *arg;
} emu_op;

typedef struct emu_stream {
    unsigned magic;
    int capturing;           /* 0; 1 capturing; 2 capture broken */
    emu_op *ops;             /* recorded while capturing */
    size_t n, cap;
    /* records a closure (taking arg; drop(arg) on failure): 0, else -1 and
     * the capture is broken (cudaStreamEndCapture fails) */
    int (*record)(struct emu_stream *s, void (*run)(void *),
                  void (*drop)(void *), void *arg);
} emu_stream;

/* The stream if it is capturing, else NULL (work runs at once). */
static inline emu_stream *
emu_capturing(void *stream)
{
    emu_stream *s = (emu_stream *)stream;
    return s && s->magic == EMU_STREAM_MAGIC && s->capturing ? s : NULL;
}

#endif
