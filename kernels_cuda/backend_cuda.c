/* backend_cuda.c -- the CUDA backend: its lifecycle (creation, device,
 * stream, destroy), tensors and its wnn_backend_i (cu_internal.h has the
 * overview); the top of the backend's files (it calls cu_launch.c and
 * cu_device.c, and nothing calls it). */
#include "cu_internal.h"

wnn_status
cu_tensor_alloc(wnn_backend *be, uint64_t bytes, void **storage,
                wnn_error *err)
{
    cu_backend *b = cu_of(be);
    cu_enter(b);
#ifdef CK_EMU_EXACT_MALLOC /* the emulation under AddressSanitizer */
    uint64_t n = bytes ? bytes : 1;
#else
    uint64_t n = cu_align_up(bytes ? bytes : 1);
#endif
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, n);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return cu_core->failk(err, WNN_UNKNOWN_ERROR, "createTensor", NULL, NULL,
                         "cannot allocate %llu bytes of GPU memory: %s",
                         (unsigned long long)bytes, cudaGetErrorString(e));
    }
    pthread_mutex_lock(&b->cap_mu); /* (cu_internal.h) */
    e = cudaMemsetAsync(p, 0, n, b->stream);
    pthread_mutex_unlock(&b->cap_mu);
    if (e != cudaSuccess) {
        cudaFree(p);
        return cuda_error(err, WNN_UNKNOWN_ERROR, "createTensor", NULL, e,
                          "cudaMemsetAsync");
    }
    *storage = p;
    return WNN_OK;
}

void
cu_tensor_free(wnn_backend *be, void *storage)
{
    cu_backend *b = cu_of(be);
    cu_enter(b);
    pthread_mutex_lock(&b->cap_mu);
    cudaStreamSynchronize(b->stream); /* work queued on it may use it */
    pthread_mutex_unlock(&b->cap_mu);
    cudaFree(storage);
}

wnn_status
cu_tensor_write(wnn_backend *be, void *storage, const void *src,
                uint64_t bytes, wnn_error *err)
{
    cu_backend *b = cu_of(be);
    cu_enter(b);
    pthread_mutex_lock(&b->cap_mu);
    cudaError_t e = stage_write(b, storage, src, bytes);
    pthread_mutex_unlock(&b->cap_mu);
    if (e != cudaSuccess) {
        return cuda_error(err, WNN_UNKNOWN_ERROR, "writeTensor", NULL, e,
                          "copy to the GPU");
    }
    return WNN_OK;
}

wnn_status
cu_tensor_read(wnn_backend *be, const void *storage, void *dst,
               uint64_t bytes, wnn_error *err)
{
    cu_backend *b = cu_of(be);
    cu_enter(b);
    pthread_mutex_lock(&b->cap_mu);
    cudaError_t e = stage_read(b, dst, storage, bytes);
    pthread_mutex_unlock(&b->cap_mu);
    if (e != cudaSuccess) {
        return cuda_error(err, WNN_OPERATION_ERROR, "readTensor", NULL, e,
                          "copy from the GPU");
    }
    return WNN_OK;
}

/* DLPack export: the consumer may read on any stream of the device (or
 * none), so every piece of work queued on the device has to be finished,
 * not only this backend's stream. */
wnn_status
cu_tensor_device_ptr(wnn_backend *be, void *storage, void **ptr,
                     int *device_id, wnn_error *err)
{
    cu_backend *b = cu_of(be);
    cu_enter(b);
    pthread_mutex_lock(&b->cap_mu);
    cudaError_t e = cudaStreamSynchronize(b->stream);
    if (e == cudaSuccess) {
        e = cudaDeviceSynchronize();
    }
    pthread_mutex_unlock(&b->cap_mu);
    if (e != cudaSuccess) {
        return cuda_error(err, WNN_OPERATION_ERROR, "__dlpack__", NULL, e,
                          "synchronization");
    }
    *ptr = storage;
    *device_id = b->device;
    return WNN_OK;
}

/* DLPack import: src was produced on some stream of the device (the
 * producer made it ready on the legacy default stream, which the Python
 * layer asks for): wait for the device, copy on the backend's stream and
 * wait for the copy, after which the producer may free src. */
wnn_status
cu_tensor_write_device(wnn_backend *be, void *storage, const void *src,
                       uint64_t bytes, wnn_error *err)
{
    cu_backend *b = cu_of(be);
    cu_enter(b);
    pthread_mutex_lock(&b->cap_mu);
    cudaError_t e = cudaDeviceSynchronize();
    if (e == cudaSuccess && bytes) {
        e = cudaMemcpyAsync(storage, src, (size_t)bytes,
                            cudaMemcpyDeviceToDevice, b->stream);
    }
    if (e == cudaSuccess) {
        e = cudaStreamSynchronize(b->stream);
    }
    pthread_mutex_unlock(&b->cap_mu);
    if (e != cudaSuccess) {
        return cuda_error(err, WNN_UNKNOWN_ERROR, "writeTensor", NULL, e,
                          "device-to-device copy");
    }
    return WNN_OK;
}

void
cu_synchronize(wnn_backend *be)
{
    cu_backend *b = cu_of(be);
    cu_enter(b);
    pthread_mutex_lock(&b->cap_mu);
    cudaStreamSynchronize(b->stream);
    pthread_mutex_unlock(&b->cap_mu);
}

void
cu_destroy(wnn_backend *be)
{
    cu_backend *b = cu_of(be);
    cu_enter(b);
    if (b->stream) {
        cudaStreamSynchronize(b->stream);
    }
    if (b->blas) {
        cublasDestroy(b->blas);
    }
    if (b->blas_ws) { /* after the handle that used it */
        cudaFree(b->blas_ws);
    }
    if (b->dnn && b->dnn_h) {
        b->dnn->cudnnDestroy(b->dnn_h);
    }
    dnn_cache_free(b);
    for (int k = 0; k < 2; k++) {
        if (b->stage_ev[k]) {
            cudaEventDestroy(b->stage_ev[k]);
        }
        if (b->stage[k]) {
            cudaFreeHost(b->stage[k]);
        }
    }
    if (b->stream) {
        cudaStreamDestroy(b->stream);
    }
    pthread_mutex_destroy(&b->stage_mu);
    pthread_mutex_destroy(&b->blas_mu);
    pthread_mutex_destroy(&b->dnn_mu);
    pthread_mutex_destroy(&b->cap_mu);
    free(b);
}

static const wnn_backend_i cu_iface = {
    .api_version = WNN_BACKEND_API_VERSION,
    .name = "cuda",
    .device = WNN_DEVICE_GPU,
    .accelerated = true,
    .max_tensor_bytes = (uint64_t)1 << 32,
    .op_limits = cu_op_limits,
    .compile = cu_compile,
    .compiled_free = cu_compiled_free,
    .execute = cu_execute,
    .tensor_alloc = cu_tensor_alloc,
    .tensor_free = cu_tensor_free,
    .tensor_write = cu_tensor_write,
    .tensor_read = cu_tensor_read,
    .synchronize = cu_synchronize,
    .destroy = cu_destroy,
    .tensor_device_ptr = cu_tensor_device_ptr,
    .tensor_write_device = cu_tensor_write_device,
};

/* NotSupportedError "no usable GPU: <reason>" (as registry.c says when the
 * library cannot be loaded) */
wnn_status
cu_not_supported(wnn_error *err, const char *fmt, ...)
{
    char why[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    return cu_core->failk(err, WNN_NOT_SUPPORTED, "createContext", NULL,
                     "deviceType", "no usable GPU: %s", why);
}

const wnn_core_services *cu_core;

/* Called once by registry.c right after loading the library, before any
 * wnn_cuda_backend_create: the core's services (backend.h).  False when the
 * table is not the version this library was built for. */
EXPORT bool
wnn_cuda_backend_init(const wnn_core_services *core)
{
    if (!core || core->version != WNN_CORE_SERVICES_VERSION ||
        core->size != sizeof(wnn_core_services)) {
        return false;
    }
    cu_core = core;
    return true;
}

/* The entry point that registry.c looks up: a backend on the GPU numbered
 * WEBNN_CUDA_DEVICE (default 0), or WNN_ERR (NotSupportedError naming the
 * reason) when no device or driver is usable. */
EXPORT wnn_status
wnn_cuda_backend_create(wnn_backend **out, wnn_error *err)
{
    int count = 0, dev = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return cu_not_supported(err, "CUDA: %s (%s)",
                             cudaGetErrorName(e), cudaGetErrorString(e));
    }
    if (count <= 0) {
        return cu_not_supported(err, "no CUDA device");
    }
    const char *env = getenv("WEBNN_CUDA_DEVICE");
    if (env && env[0]) {
        char *end;
        long v = strtol(env, &end, 10);
        if (*end || v < 0 || v >= count) {
            return cu_not_supported(err, "WEBNN_CUDA_DEVICE=%s is not a device "
                                 "number below %d", env, count);
        }
        dev = (int)v;
    }
    if ((e = cudaSetDevice(dev)) != cudaSuccess) {
        cudaGetLastError();
        return cu_not_supported(err, "cannot use CUDA device %d: %s", dev,
                             cudaGetErrorString(e));
    }
    struct cudaDeviceProp prop;
    memset(&prop, 0, sizeof(prop));
    if ((e = cudaGetDeviceProperties(&prop, dev)) != cudaSuccess) {
        cudaGetLastError();
        return cu_not_supported(err, "cannot query CUDA device %d: %s", dev,
                             cudaGetErrorString(e));
    }
    if ((e = ck_probe()) != cudaSuccess) {
        cudaGetLastError();
        return cu_not_supported(err, "CUDA device %d (%s, compute capability "
                             "%d.%d) cannot run this build's kernels (sm_90): "
                             "%s", dev, prop.name, prop.major, prop.minor,
                             cudaGetErrorString(e));
    }
    cu_backend *b = calloc(1, sizeof(*b));
    if (!b) {
        return cu_core->failk(err, WNN_OUT_OF_MEMORY, "createContext", NULL, NULL,
                         "out of memory");
    }
    b->device = dev;
    b->base.iface = &b->iface;
    b->base.impl = b;
    b->iface = cu_iface;
    b->iface.device_id = dev;
    pthread_mutex_init(&b->stage_mu, NULL);
    pthread_mutex_init(&b->blas_mu, NULL);
    pthread_mutex_init(&b->dnn_mu, NULL);
    pthread_mutex_init(&b->cap_mu, NULL);
    /* fusion is a capability the core's pipeline reads (backend.h);
     * WEBNN_CUDA_FUSION=0 when the context is created turns it off */
    const char *fenv = getenv("WEBNN_CUDA_FUSION");
    b->base.fuses = fenv && strcmp(fenv, "0") == 0 ? 0 : WNN_FUSE_EPILOGUE;
    const char *dnn_env = getenv("WEBNN_CUDNN");
    b->dnn_off = dnn_env && strcmp(dnn_env, "0") == 0;
    /* WEBNN_CUDNN_FIND=0: the heuristics' first algorithm (no measuring at
     * compile), and float16 with a bias always on the fused IDENTITY call */
    const char *find_env = getenv("WEBNN_CUDNN_FIND");
    b->dnn_find_off = find_env && strcmp(find_env, "0") == 0;
    /* WEBNN_CUDA_GRAPHS=0: every dispatch runs its steps, never a CUDA
     * graph's replay (cu_launch.c) */
    const char *genv = getenv("WEBNN_CUDA_GRAPHS");
    b->graphs_off = genv && strcmp(genv, "0") == 0;
    const char *venv = getenv("WEBNN_CUDA_GRAPHS_VERBOSE");
    b->graphs_verbose = venv && strcmp(venv, "1") == 0;
    if ((e = cudaStreamCreateWithFlags(&b->stream, cudaStreamNonBlocking)) !=
        cudaSuccess) {
        cudaGetLastError();
        b->stream = NULL;
        cu_destroy(&b->base);
        return cu_not_supported(err, "cannot create a CUDA stream: %s",
                             cudaGetErrorString(e));
    }
    uint64_t mem = (uint64_t)prop.totalGlobalMem;
    if (mem && mem < b->iface.max_tensor_bytes) {
        b->iface.max_tensor_bytes = mem;
    }
    *out = &b->base;
    return WNN_OK;
}
