/* registry.c -- picks a backend for a device.  The CPU backend is linked in;
 * the CUDA backend lives in a separate shared object (libwebnn_cuda*.so, built
 * from kernels_cuda/ when nvcc is present) that is loaded only when a GPU is
 * asked for, so the core never links against CUDA and everything works on a
 * machine without a GPU, a driver or the CUDA libraries. */

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/internal.h"
#include "../ops/ops_internal.h"

static pthread_once_t cuda_once = PTHREAD_ONCE_INIT;
static wnn_cuda_backend_create_fn cuda_create;
static char cuda_why[200] = "the CUDA backend was not built";

static void
load_cuda(void)
{
    char path[PATH_MAX];
    const char *env = getenv("WEBNN_CUDA_LIBRARY");
    void *h = NULL;
    if (env && env[0]) {
        snprintf(path, sizeof(path), "%s", env);
    } else {
        /* Next to the shared object that holds the core. */
        Dl_info info;
        if (dladdr((void *)&load_cuda, &info) == 0 || !info.dli_fname) {
            return;
        }
        snprintf(path, sizeof(path), "%s", info.dli_fname);
        char *slash = strrchr(path, '/');
        if (!slash) {
            return;
        }
        snprintf(slash + 1, sizeof(path) - (size_t)(slash + 1 - path),
                 "libwebnn_cuda.so");
    }
    h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(cuda_why, sizeof(cuda_why), "cannot load %s: %s", path,
                 e ? e : "?");
        return;
    }
    cuda_create = (wnn_cuda_backend_create_fn)dlsym(h, "wnn_cuda_backend_create");
    if (!cuda_create) {
        snprintf(cuda_why, sizeof(cuda_why), "%s has no backend entry", path);
    }
}

static pthread_mutex_t probe_mu = PTHREAD_MUTEX_INITIALIZER;
static int gpu_usable = -1;

bool
wnn_device_available(wnn_device d)
{
    if (d == WNN_DEVICE_CPU) {
        return true;
    }
    pthread_mutex_lock(&probe_mu);
    if (gpu_usable < 0) {
        wnn_backend *be = NULL;
        wnn_error err;
        pthread_once(&cuda_once, load_cuda);
        gpu_usable = cuda_create && cuda_create(&be, &err) == WNN_OK;
        if (be) {
            be->iface->destroy(be);
        } else if (cuda_create) {
            snprintf(cuda_why, sizeof(cuda_why), "%s", err.message);
        }
    }
    pthread_mutex_unlock(&probe_mu);
    return gpu_usable == 1;
}

wnn_status
wnn_backend_create(wnn_device d, wnn_backend **out, wnn_error *err)
{
    if (d == WNN_DEVICE_CPU) {
        return wnn_cpu_backend_create(out, err);
    }
    pthread_once(&cuda_once, load_cuda);
    if (!cuda_create) {
        return wnn_failk(err, WNN_NOT_SUPPORTED, "createContext", NULL,
                         "deviceType", "no usable GPU: %s", cuda_why);
    }
    if (cuda_create(out, err) != WNN_OK) {
        return WNN_ERR;
    }
    if ((*out)->iface->api_version != WNN_BACKEND_API_VERSION) {
        int v = (*out)->iface->api_version;
        (*out)->iface->destroy(*out);
        *out = NULL;
        return wnn_failk(err, WNN_NOT_SUPPORTED, "createContext", NULL,
                         "deviceType", "the GPU backend library speaks "
                         "backend API %d, the core %d (rebuild it)", v,
                         WNN_BACKEND_API_VERSION);
    }
    return WNN_OK;
}
