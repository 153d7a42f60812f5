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

