/* cudnn_dl.c -- loads cuDNN 9 at run time (see cudnn_dl.h). */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudnn_dl.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static wdnn_api api;
static const wdnn_api *loaded;
static char reason[300];

static bool
try_load(const char *path)
{
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(reason, sizeof(reason), "cannot load %s", path);
        return false;
    }
    memset(&api, 0, sizeof(api));
    api.lib = lib;
#define WDNN_RESOLVE(name, ret, args)                                          \
    *(void **)&api.name = dlsym(lib, #name);                                   \
    if (!api.name) {                                                           \
        snprintf(reason, sizeof(reason), "%s has no %s", path, #name);         \
        dlclose(lib);                                                          \
        return false;                                                          \
    }
    WDNN_FUNCS(WDNN_RESOLVE)
#undef WDNN_RESOLVE
    size_t v = api.cudnnGetVersion();
    if (v / 10000 != 9) { /* 9.x.y is 9xxyy */
        snprintf(reason, sizeof(reason), "%s is cuDNN version %zu, not 9",
                 path, v);
        dlclose(lib);
        return false;
    }
    snprintf(api.path, sizeof(api.path), "%s", path);
    return true;
}

/* Where cuDNN 9 is looked for, unless WEBNN_CUDNN_LIBRARY names one:
 *  1. "libcudnn.so.9" by the loader's search, which starts with this
 *     library's RUNPATH: site-packages/nvidia/cudnn/lib of `pip install
 *     webnn[cuda]` (nvidia-cudnn-cu13; kernels_cuda/build_cuda.py), then
 *     LD_LIBRARY_PATH and ld.so.cache (Debian's or NVIDIA's packages);
 *  2. the same wheel layout found from this library's own path (should its
 *     RUNPATH have been stripped or rewritten);
 *  3. a CUDA toolkit's folders: $CUDA_HOME, $CUDA_PATH, /usr/local/cuda;
 *  4. "libcudnn.so" (a development install). */
static void
load_once(void)
{
    const char *env = getenv("WEBNN_CUDNN_LIBRARY");
    const char *cands[10];
    int n = 0;
    if (env && env[0]) {
        cands[n++] = env; /* only this one when it is set */
    } else {
#ifdef WNN_CUDNN_EMU
        /* The CPU emulation of the backend (kernels_cuda/emu): only the
         * emulated cuDNN, never a real one found on the loader's path (on a
         * GPU host that would be handed the emulation's host pointers and
         * crash); without it the convolutions take the direct kernels. */
        if (WNN_CUDNN_EMU_PATH[0]) {
            cands[n++] = WNN_CUDNN_EMU_PATH;
        } else {
            snprintf(reason, sizeof(reason),
                     "the emulation was built without cuDNN's headers");
        }
#else
        static char paths[5][PATH_MAX];
        int np = 0;
        cands[n++] = "libcudnn.so.9";
        Dl_info info;
        if (dladdr((void *)&load_once, &info) && info.dli_fname) {
            const char *slash = strrchr(info.dli_fname, '/');
            if (slash) {
                snprintf(paths[np], sizeof(paths[np]),
                         "%.*s/../nvidia/cudnn/lib/libcudnn.so.9",
                         (int)(slash - info.dli_fname), info.dli_fname);
                cands[n++] = paths[np++];
            }
        }
        const char *roots[3] = {getenv("CUDA_HOME"), getenv("CUDA_PATH"), "/usr/local/cuda"};
        for (int r = 0; r < 3; r++) {
            if (roots[r] && roots[r][0] && np < 5) {
                snprintf(paths[np], sizeof(paths[np]), "%s/lib64/libcudnn.so.9", roots[r]);
                cands[n++] = paths[np++];
            }
        }
        cands[n++] = "libcudnn.so";
#endif
    }
    char first[sizeof(reason)] = "";
    for (int i = 0; i < n; i++) {
        if (try_load(cands[i])) {
            loaded = &api;
            return;
        }
        if (!first[0]) {
            snprintf(first, sizeof(first), "%s", reason);
        }
    }
    if (first[0]) {
        snprintf(reason, sizeof(reason), "%s", first); /* the first candidate's */
    }
}

const wdnn_api *
wdnn_load(const char **why)
{
    pthread_once(&once, load_once);
    if (why) {
        *why = loaded ? api.path : reason;
    }
    return loaded;
}
