/* cudnn_dl.h -- the part of cuDNN 9's legacy convolution API the backend
 * uses, loaded at run time with dlopen (cudnn_dl.c): the library never
 * links libcudnn, and builds without cuDNN's headers.  The declarations
 * below mirror cudnn_graph.h / cudnn_ops.h / cudnn_cnn.h of cuDNN 9 (enum
 * values, the algorithm perf struct); kernels_cuda/emu/cudnn_abi_check.c
 * checks them against the real headers wherever those are installed. */
#ifndef WNN_CUDNN_DL_H
#define WNN_CUDNN_DL_H
#include <stddef.h>

#include <cuda_runtime_api.h>

typedef int wdnn_status; /* cudnnStatus_t */
enum {
    WDNN_STATUS_SUCCESS = 0,
    WDNN_STATUS_BAD_PARAM = 2000,
    WDNN_STATUS_NOT_SUPPORTED = 3000,
    WDNN_DATA_FLOAT = 0,          /* cudnnDataType_t */
    WDNN_DATA_HALF = 2,
    WDNN_TENSOR_NCHW = 0,         /* cudnnTensorFormat_t */
    WDNN_TENSOR_NHWC = 1,
    WDNN_CROSS_CORRELATION = 1,   /* cudnnConvolutionMode_t */
    WDNN_DEFAULT_MATH = 0,        /* cudnnMathType_t */
    WDNN_TENSOR_OP_MATH = 1,
    WDNN_FMA_MATH = 3,
    WDNN_ACTIVATION_RELU = 1,     /* cudnnActivationMode_t */
    WDNN_ACTIVATION_CLIPPED_RELU = 3,
    WDNN_ACTIVATION_IDENTITY = 5,
    WDNN_PROPAGATE_NAN = 1,       /* cudnnNanPropagation_t */
    WDNN_FWD_ALGO_IMPLICIT_GEMM = 0,   /* cudnnConvolutionFwdAlgo_t */
    WDNN_FWD_ALGO_IMPLICIT_PRECOMP_GEMM = 1,
    WDNN_FWD_ALGO_FFT = 4,             /* 4..7: FFT, FFT_TILING, WINOGRAD,
                                        * WINOGRAD_NONFUSED */
    WDNN_BWD_DATA_ALGO_FFT = 2         /* cudnnConvolutionBwdDataAlgo_t 2..5:
                                        * the same four */
};

typedef struct wdnn_context *wdnn_handle;
typedef struct wdnn_tensor_struct *wdnn_tdesc;
typedef struct wdnn_filter_struct *wdnn_fdesc;
typedef struct wdnn_conv_struct *wdnn_cdesc;
typedef struct wdnn_act_struct *wdnn_adesc;

/* cudnnConvolutionFwdAlgoPerf_t and cudnnConvolutionBwdDataAlgoPerf_t */
typedef struct wdnn_algo_perf {
    int algo;
    wdnn_status status;
    float time;
    size_t memory;
    int determinism;
    int mathType;
    int reserved[3];
} wdnn_algo_perf;

/* X(name, return type, parameters): every function, resolved by name */
#define WDNN_FUNCS(X)                                                          \
    X(cudnnGetVersion, size_t, (void))                                         \
    X(cudnnGetErrorString, const char *, (wdnn_status))                        \
    X(cudnnCreate, wdnn_status, (wdnn_handle *))                               \
    X(cudnnDestroy, wdnn_status, (wdnn_handle))                                \
    X(cudnnSetStream, wdnn_status, (wdnn_handle, cudaStream_t))                \
    X(cudnnCreateTensorDescriptor, wdnn_status, (wdnn_tdesc *))                \
    X(cudnnSetTensor4dDescriptor, wdnn_status,                                 \
      (wdnn_tdesc, int, int, int, int, int, int))                              \
    X(cudnnDestroyTensorDescriptor, wdnn_status, (wdnn_tdesc))                 \
    X(cudnnCreateFilterDescriptor, wdnn_status, (wdnn_fdesc *))                \
    X(cudnnSetFilter4dDescriptor, wdnn_status,                                 \
      (wdnn_fdesc, int, int, int, int, int, int))                              \
    X(cudnnDestroyFilterDescriptor, wdnn_status, (wdnn_fdesc))                 \
    X(cudnnCreateConvolutionDescriptor, wdnn_status, (wdnn_cdesc *))           \
    X(cudnnSetConvolution2dDescriptor, wdnn_status,                            \
      (wdnn_cdesc, int, int, int, int, int, int, int, int))                    \
    X(cudnnSetConvolutionGroupCount, wdnn_status, (wdnn_cdesc, int))           \
    X(cudnnSetConvolutionMathType, wdnn_status, (wdnn_cdesc, int))             \
    X(cudnnDestroyConvolutionDescriptor, wdnn_status, (wdnn_cdesc))            \
    X(cudnnGetConvolution2dForwardOutputDim, wdnn_status,                      \
      (wdnn_cdesc, wdnn_tdesc, wdnn_fdesc, int *, int *, int *, int *))        \
    X(cudnnGetConvolutionForwardAlgorithm_v7, wdnn_status,                     \
      (wdnn_handle, wdnn_tdesc, wdnn_fdesc, wdnn_cdesc, wdnn_tdesc, int,       \
       int *, wdnn_algo_perf *))                                               \
    X(cudnnGetConvolutionForwardWorkspaceSize, wdnn_status,                    \
      (wdnn_handle, wdnn_tdesc, wdnn_fdesc, wdnn_cdesc, wdnn_tdesc, int,       \
       size_t *))                                                              \
    X(cudnnConvolutionForward, wdnn_status,                                    \
      (wdnn_handle, const void *, wdnn_tdesc, const void *, wdnn_fdesc,        \
       const void *, wdnn_cdesc, int, void *, size_t, const void *,            \
       wdnn_tdesc, void *))                                                    \
    X(cudnnGetConvolutionBackwardDataAlgorithm_v7, wdnn_status,                \
      (wdnn_handle, wdnn_fdesc, wdnn_tdesc, wdnn_cdesc, wdnn_tdesc, int,       \
       int *, wdnn_algo_perf *))                                               \
    X(cudnnFindConvolutionForwardAlgorithm, wdnn_status,                       \
      (wdnn_handle, wdnn_tdesc, wdnn_fdesc, wdnn_cdesc, wdnn_tdesc, int,       \
       int *, wdnn_algo_perf *))                                               \
    X(cudnnFindConvolutionBackwardDataAlgorithm, wdnn_status,                  \
      (wdnn_handle, wdnn_fdesc, wdnn_tdesc, wdnn_cdesc, wdnn_tdesc, int,       \
       int *, wdnn_algo_perf *))                                               \
    X(cudnnGetConvolutionBackwardDataWorkspaceSize, wdnn_status,               \
      (wdnn_handle, wdnn_fdesc, wdnn_tdesc, wdnn_cdesc, wdnn_tdesc, int,       \
       size_t *))                                                              \
    X(cudnnConvolutionBackwardData, wdnn_status,                               \
      (wdnn_handle, const void *, wdnn_fdesc, const void *, wdnn_tdesc,        \
       const void *, wdnn_cdesc, int, void *, size_t, const void *,            \
       wdnn_tdesc, void *))                                                    \
    X(cudnnCreateActivationDescriptor, wdnn_status, (wdnn_adesc *))            \
    X(cudnnSetActivationDescriptor, wdnn_status,                               \
      (wdnn_adesc, int, int, double))                                          \
    X(cudnnDestroyActivationDescriptor, wdnn_status, (wdnn_adesc))             \
    X(cudnnConvolutionBiasActivationForward, wdnn_status,                      \
      (wdnn_handle, const void *, wdnn_tdesc, const void *, wdnn_fdesc,        \
       const void *, wdnn_cdesc, int, void *, size_t, const void *,            \
       wdnn_tdesc, const void *, wdnn_tdesc, const void *, wdnn_adesc,         \
       wdnn_tdesc, void *))

typedef struct wdnn_api {
    void *lib;
    char path[256]; /* the library that was loaded */
#define WDNN_MEMBER(name, ret, args) ret(*name) args;
    WDNN_FUNCS(WDNN_MEMBER)
#undef WDNN_MEMBER
} wdnn_api;

/* The process-wide table, loaded once: $WEBNN_CUDNN_LIBRARY, else
 * libcudnn.so.9, else libcudnn.so (and, in the emulation's build, the
 * emulated cuDNN first).  NULL when no library loads, when a
 * symbol is missing or when its major version is not 9: the backend then
 * uses its own kernels (as it does for a backend created with
 * WEBNN_CUDNN=0).  `why` (may be NULL) gets the reason or the path. */
const wdnn_api *wdnn_load(const char **why);

#endif
