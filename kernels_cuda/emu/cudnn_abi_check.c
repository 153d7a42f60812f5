/* cudnn_abi_check.c -- compiled (never linked) by the emulation's build:
 * kernels_cuda/cudnn_dl.h's own declarations of cuDNN 9 against the real
 * cudnn.h, so that a wrong enum value, struct layout or signature fails
 * the build where cuDNN's headers are installed. */
#include <stddef.h>

#include <cudnn.h>

#include "cudnn_dl.h"

_Static_assert(CUDNN_MAJOR == 9, "cuDNN 9 headers");
_Static_assert(WDNN_STATUS_SUCCESS == CUDNN_STATUS_SUCCESS, "status");
_Static_assert(WDNN_STATUS_BAD_PARAM == CUDNN_STATUS_BAD_PARAM, "status");
_Static_assert(WDNN_STATUS_NOT_SUPPORTED == CUDNN_STATUS_NOT_SUPPORTED, "status");
_Static_assert(WDNN_DATA_FLOAT == CUDNN_DATA_FLOAT && WDNN_DATA_HALF == CUDNN_DATA_HALF, "dtype");
_Static_assert(WDNN_TENSOR_NCHW == CUDNN_TENSOR_NCHW && WDNN_TENSOR_NHWC == CUDNN_TENSOR_NHWC,
               "format");
_Static_assert(WDNN_CROSS_CORRELATION == CUDNN_CROSS_CORRELATION, "mode");
_Static_assert(WDNN_DEFAULT_MATH == CUDNN_DEFAULT_MATH &&
                   WDNN_TENSOR_OP_MATH == CUDNN_TENSOR_OP_MATH &&
                   WDNN_FMA_MATH == CUDNN_FMA_MATH, "math");
_Static_assert(WDNN_ACTIVATION_RELU == CUDNN_ACTIVATION_RELU &&
                   WDNN_ACTIVATION_CLIPPED_RELU == CUDNN_ACTIVATION_CLIPPED_RELU &&
                   WDNN_ACTIVATION_IDENTITY == CUDNN_ACTIVATION_IDENTITY, "activation");
_Static_assert(WDNN_PROPAGATE_NAN == CUDNN_PROPAGATE_NAN, "nan");
_Static_assert(WDNN_FWD_ALGO_IMPLICIT_PRECOMP_GEMM ==
                   CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, "algo");
_Static_assert(sizeof(wdnn_algo_perf) == sizeof(cudnnConvolutionFwdAlgoPerf_t) &&
                   sizeof(wdnn_algo_perf) == sizeof(cudnnConvolutionBwdDataAlgoPerf_t) &&
                   offsetof(wdnn_algo_perf, memory) ==
                       offsetof(cudnnConvolutionFwdAlgoPerf_t, memory) &&
                   offsetof(wdnn_algo_perf, mathType) ==
                       offsetof(cudnnConvolutionFwdAlgoPerf_t, mathType) &&
                   offsetof(wdnn_algo_perf, status) ==
                       offsetof(cudnnConvolutionFwdAlgoPerf_t, status),
               "perf struct");
_Static_assert(sizeof(cudnnStatus_t) == sizeof(int) && sizeof(cudnnDataType_t) == sizeof(int),
               "enums are ints");

_Static_assert(WDNN_FWD_ALGO_IMPLICIT_GEMM == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
               "algo");
/* the transform algorithms, contiguous from *_FFT up (cu_dnn.c dnn_perf_ok) */
_Static_assert(WDNN_FWD_ALGO_FFT == CUDNN_CONVOLUTION_FWD_ALGO_FFT &&
                   CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING == WDNN_FWD_ALGO_FFT + 1 &&
                   CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD == WDNN_FWD_ALGO_FFT + 2 &&
                   CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED == WDNN_FWD_ALGO_FFT + 3 &&
                   CUDNN_CONVOLUTION_FWD_ALGO_COUNT == WDNN_FWD_ALGO_FFT + 4,
               "forward transform algorithms");
_Static_assert(WDNN_BWD_DATA_ALGO_FFT == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT &&
                   CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING == WDNN_BWD_DATA_ALGO_FFT + 1 &&
                   CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD == WDNN_BWD_DATA_ALGO_FFT + 2 &&
                   CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED ==
                       WDNN_BWD_DATA_ALGO_FFT + 3 &&
                   CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT == WDNN_BWD_DATA_ALGO_FFT + 4,
               "backward-data transform algorithms");

/* the Find functions (cu_dnn.c dnn_find): cuDNN's own prototypes against
 * the ones cudnn_dl.h's table is called with (wdnn_* for cudnn*_t, the
 * perf struct checked above) */
_Static_assert(__builtin_types_compatible_p(
                   __typeof__(&cudnnFindConvolutionForwardAlgorithm),
                   cudnnStatus_t (*)(cudnnHandle_t, cudnnTensorDescriptor_t,
                                     cudnnFilterDescriptor_t, cudnnConvolutionDescriptor_t,
                                     cudnnTensorDescriptor_t, int, int *,
                                     cudnnConvolutionFwdAlgoPerf_t *)),
               "cudnnFindConvolutionForwardAlgorithm");
_Static_assert(__builtin_types_compatible_p(
                   __typeof__(&cudnnFindConvolutionBackwardDataAlgorithm),
                   cudnnStatus_t (*)(cudnnHandle_t, cudnnFilterDescriptor_t,
                                     cudnnTensorDescriptor_t, cudnnConvolutionDescriptor_t,
                                     cudnnTensorDescriptor_t, int, int *,
                                     cudnnConvolutionBwdDataAlgoPerf_t *)),
               "cudnnFindConvolutionBackwardDataAlgorithm");
