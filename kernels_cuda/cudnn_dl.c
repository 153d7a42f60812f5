/* cudnn_dl.c -- loads cuDNN 9 at run time (see cudnn_dl.h). */
#include <dlfcn.h>
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

static void
load_once(void)
{
    const char *env = getenv("WEBNN_CUDNN_LIBRARY");
    const char *cands[4];
    int n = 0;
    if (env && env[0]) {
        cands[n++] = env; /* only this one when it is set */
    } else {
#ifdef WNN_CUDNN_EMU_PATH
        cands[n++] = WNN_CUDNN_EMU_PATH; /* the emulation's build */
#endif
        cands[n++] = "libcudnn.so.9";
        cands[n++] = "libcudnn.so";
    }
    for (int i = 0; i < n; i++) {
        if (try_load(cands[i])) {
            loaded = &api;
            return;
        }
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
