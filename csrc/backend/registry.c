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
#include <unistd.h>

#include "../core/internal.h"
#include "../ops/ops_internal.h"
#include "../compiler/lower/lower.h"

/* The core's services the CUDA library uses (backend.h), given to it at
 * load time. */
static const wnn_core_services core_services = {
    .version = WNN_CORE_SERVICES_VERSION,
    .size = sizeof(wnn_core_services),
    .op_get = wnn_op_get,
    .failk = wnn_failk,
    .dtype_size = wnn_dtype_size,
    .desc_elements = wnn_desc_elements,
    .desc_bytes = wnn_desc_bytes,
    .scalar_params_of = wnn_scalar_params_of,
    .view_simplify = wnn_view_simplify,
};

static pthread_once_t cuda_once = PTHREAD_ONCE_INIT;
static wnn_cuda_backend_create_fn cuda_create;
static char cuda_why[512] = "the CUDA backend was not built";

/* The library a failed dlopen() could not find: the loader says
 * "libcudart.so.13: cannot open shared object file: ...". */
static bool
missing_library(const char *err, char *name, size_t cap)
{
    const char *colon = err ? strstr(err, ": cannot open shared object file") : NULL;
    if (!colon) {
        return false;
    }
    const char *start = colon;
    while (start > err && start[-1] != ' ' && start[-1] != ':') {
        start--;
    }
    size_t n = (size_t)(colon - start);
    if (n == 0 || n >= cap || memchr(start, '/', n)) {
        return false; /* a path, not a soname */
    }
    memcpy(name, start, n);
    name[n] = '\0';
    return true;
}

/* dlopen(path); when a library it needs is not on the loader's path (a CUDA
 * toolkit that is not in ld.so.conf), load that library from the usual CUDA
 * folders first ($CUDA_HOME, $CUDA_PATH, /usr/local/cuda) and try again: once
 * loaded, a library satisfies every later need of its soname.  The NVIDIA
 * wheels of `pip install webnn[cuda]` need none of this: libwebnn_cuda.so's
 * RUNPATH finds them (kernels_cuda/build_cuda.py). */
static void *
dlopen_with_cuda_fallback(const char *path, int depth, char *why, size_t why_cap)
{
    for (int attempt = 0; attempt < 8; attempt++) {
        void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (h) {
            return h;
        }
        const char *e = dlerror();
        snprintf(why, why_cap, "%s", e ? e : "?");
        char need[128];
        if (depth > 4 || !missing_library(why, need, sizeof(need))) {
            return NULL;
        }
        const char *roots[4] = {getenv("CUDA_HOME"), getenv("CUDA_PATH"),
                                "/usr/local/cuda", NULL};
        static const char *subs[] = {"lib64", "lib", "targets/x86_64-linux/lib"};
        bool loaded = false;
        for (int r = 0; r < 3 && !loaded; r++) {
            if (!roots[r] || !roots[r][0]) {
                continue;
            }
            for (size_t s = 0; s < sizeof(subs) / sizeof(subs[0]) && !loaded; s++) {
                char cand[PATH_MAX];
                snprintf(cand, sizeof(cand), "%s/%s/%s", roots[r], subs[s], need);
                if (access(cand, R_OK) != 0) {
                    continue;
                }
                char sub_why[256];
                loaded = dlopen_with_cuda_fallback(cand, depth + 1, sub_why,
                                                   sizeof(sub_why)) != NULL;
            }
        }
        if (!loaded) {
            return NULL; /* why: the loader's message about `need` */
        }
    }
    return NULL;
}

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
    char err[384];
    h = dlopen_with_cuda_fallback(path, 0, err, sizeof(err));
    if (!h) {
        char need[128];
        bool cuda_lib = missing_library(err, need, sizeof(need)) &&
                        (strncmp(need, "libcu", 5) == 0 || strncmp(need, "libnv", 5) == 0);
        if (cuda_lib) {
            snprintf(cuda_why, sizeof(cuda_why),
                     "cannot load %s: %s not found (pip install 'webnn[cuda]', or a "
                     "CUDA 13 toolkit in /usr/local/cuda or $CUDA_HOME)", path, need);
        } else {
            snprintf(cuda_why, sizeof(cuda_why), "cannot load %s: %s", path, err);
        }
        return;
    }
    wnn_cuda_backend_init_fn init =
        (wnn_cuda_backend_init_fn)dlsym(h, "wnn_cuda_backend_init");
    if (!init) {
        snprintf(cuda_why, sizeof(cuda_why),
                 "%s has no backend entry (wnn_cuda_backend_init)", path);
        return;
    }
    if (!init(&core_services)) {
        snprintf(cuda_why, sizeof(cuda_why),
                 "%s was not built for this core's services (version %d)",
                 path, WNN_CORE_SERVICES_VERSION);
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
