/* cu_launch.c -- compile() and execute(): the state of each step of the
 * core's schedule (g->schedule, backend/steps.h) made once, then only
 * launches (run_node, views) (cu_internal.h has the overview). */
#include "cu_internal.h"

void
cu_compiled_free(wnn_backend *be, void *ptr)
{
    cu_compiled *c = ptr;
    if (!c) {
        return;
    }
    cu_backend *b = cu_of(be);
    cu_enter(b);
    /* queued work may still use the memory (not while another graph is
     * being captured on the stream: the synchronisation would break it) */
    pthread_mutex_lock(&b->cap_mu);
    cudaStreamSynchronize(b->stream);
    pthread_mutex_unlock(&b->cap_mu);
    if (c->gexec) {
        cudaGraphExecDestroy(c->gexec);
    }
    for (uint32_t i = 0; i < c->n_nodes; i++) {
        dnn_free(b, c->nodes[i].dnn, false);
    }
    cudaFree(c->arena);
    cudaFree(c->consts);
    cudaFree(c->scratch);
    pthread_mutex_destroy(&c->mu);
    free(c->nodes);
    free(c->const_off);
    free(c->ptr_in);
    free(c->ptr_out);
    free(c->cap_in);
    free(c);
}

#define CU_OOM_MESSAGE "out of memory while compiling for the GPU"

/* One kernel of a step (its node, a chain's producer, or the activation
 * whose parameters a chain's epilogue takes): its kernel parameters and
 * scratch. */
static wnn_status
prep_kernel(cu_backend *b, cu_node *cn, const wnn_graph *g, uint32_t id,
            wnn_error *err)
{
    const wnn_ir *ir = g->ir;
    const wnn_node *node = &ir->nodes[id];
    wnn_desc in[node->n_in + 1], outd[node->n_out + 1];
    for (uint32_t j = 0; j < node->n_in; j++) {
        in[j] = ir->operands[node->in[j]].desc;
    }
    for (uint32_t j = 0; j < node->n_out; j++) {
        outd[j] = ir->operands[node->out[j]].desc;
    }
    cn->node = node;
    cn->lowered = &g->lowered[id];
    cn->kind = cu_kind_of(node->op);
    if (cn->kind == K_NONE) {
        return cu_core->failk(err, WNN_NOT_SUPPORTED, "build", NULL, NULL,
                              "%s has no CUDA kernel",
                              cu_core->op_get(node->op)->camel);
    }
    if (!prep_node(cn, in, outd)) {
        return cu_core->failk(err, WNN_OUT_OF_MEMORY, "build", NULL, NULL,
                              CU_OOM_MESSAGE);
    }
    if ((cn->kind == K_MATMUL || cn->kind == K_GEMM || cn->kind == K_RNN) &&
        need_blas(b, err) != WNN_OK) {
        return WNN_ERR;
    }
    return WNN_OK;
}

/* The steps of the schedule (g->schedule, in its order; this backend
 * declares WNN_FUSE_EPILOGUE only, so a step is a node or an epilogue
 * chain run at its last node as its producer): each one's kernel, the
 * largest number of inputs or outputs (c->max_io). */
static wnn_status
prep_nodes(cu_backend *b, cu_compiled *c, const wnn_graph *g, wnn_error *err)
{
    for (uint32_t i = 0; i < g->schedule.n_steps; i++) {
        const wnn_step *st = &g->schedule.steps[i];
        cu_node *cn = &c->nodes[c->n_nodes++];
        cn->step = st;
        if (st->kind != WNN_STEP_NODE && st->kind != WNN_STEP_EPILOGUE) {
            return cu_core->failk(err, WNN_NOT_SUPPORTED, "build", NULL, NULL,
                                  "internal error: a fused step the CUDA "
                                  "backend does not run");
        }
        if (prep_kernel(b, cn, g, st->node, err) != WNN_OK) {
            return WNN_ERR;
        }
        cn->result = st->result;
        cn->addend = st->addend;
        if (st->n_in > c->max_io) {
            c->max_io = st->n_in;
        }
        if (st->n_out > c->max_io) {
            c->max_io = st->n_out;
        }
    }
    return WNN_OK;
}

/* A producer (conv2d, convTranspose2d, matmul, gemm): the epilogue of its
 * step's chain (its add and activation, from the core's fusion, g->fusion:
 * this backend declares WNN_FUSE_EPILOGUE unless WEBNN_CUDA_FUSION=0) or
 * its own bias, a convolution on cuDNN. */
static wnn_status
plan_producer(cu_backend *b, cu_node *cn, const wnn_graph *g, wnn_error *err)
{
    const wnn_ir *ir = g->ir;
    const wnn_step *st = cn->step;
    const wnn_epilogue *chain = st->epi;
    cu_node act = { 0 };
    const cu_node *act_cn = NULL;
    const wnn_desc *od = &ir->operands[cn->node->out[0]].desc;
    wnn_epi_params *ep = &cn->epi;
    memset(ep, 0, sizeof(*ep));
    ep->dt = od->dtype;
    ep->act = -1;
    /* the extents: the schedule's (compiler/schedule.c epi_extents) */
    ep->n = st->epi_n;
    ep->C = st->epi_c;
    ep->inner = st->epi_inner;
    if (chain) {
        if (st->addend != WNN_NO_NODE) {
            ep->add = chain->add_kind == WNN_EPI_ADD_RESIDUAL ? 1 : 2;
        }
        if (st->act != WNN_NO_NODE) {
            if (prep_kernel(b, &act, g, st->act, err) != WNN_OK) {
                return WNN_ERR;
            }
            act_cn = &act;
            ep->act = act.ka.op;
            ep->sp = act.ka.sp;
        }
    }
    if (cn->kind == K_CONV && plan_dnn(b, ir, cn, chain, act_cn)) {
        /* cuDNN's convolution has no bias (the fused call has, and a
         * float16 convolution on a y filled with it) */
        ep->bias = cn->x.bias != 0 && !(cn->dnn->fused && cn->dnn->identity) &&
                   !cn->dnn->bias_fill;
    }
    cn->epi_on = ep->bias || ep->add || ep->act >= 0;
    return WNN_OK;
}

/* The producers planned, then the largest scratch of a step
 * (c->scratch_bytes: cuDNN's workspace is known once planned). */
static wnn_status
plan_producers(cu_backend *b, cu_compiled *c, const wnn_graph *g,
               wnn_error *err)
{
    for (uint32_t n = 0; n < c->n_nodes; n++) {
        cu_node *cn = &c->nodes[n];
        if ((cn->kind == K_CONV || cn->kind == K_MATMUL || cn->kind == K_GEMM) &&
            plan_producer(b, cn, g, err) != WNN_OK) {
            return WNN_ERR;
        }
        if (cn->scratch > c->scratch_bytes) {
            c->scratch_bytes = cn->scratch;
        }
    }
    return WNN_OK;
}

/* The constants in one device block, uploaded once (with the filters that
 * cuDNN needs relaid out, once); *what: the step that failed. */
static cudaError_t
upload_constants(cu_backend *b, cu_compiled *c, const wnn_graph *g,
                 const char **what)
{
    const wnn_ir *ir = g->ir;
    const wnn_plan *p = &g->plan;
    cudaError_t e = cudaSuccess;
    uint64_t const_bytes = 0;
    for (uint32_t i = 0; i < ir->n_operands; i++) {
        if (p->slots[i].kind == WNN_SLOT_CONSTANT) {
            c->const_off[i] = const_bytes;
            const_bytes += cu_align_up(cu_core->desc_bytes(&ir->operands[i].desc));
        }
    }
    for (uint32_t n = 0; n < c->n_nodes; n++) {
        cu_dnn *d = c->nodes[n].dnn;
        if (d && d->frelayout == 1) { /* a constant filter, relaid out once */
            d->fprep_off = const_bytes;
            const_bytes += d->fbytes;
        }
    }
    if (const_bytes) {
        *what = "cudaMalloc (constants)";
        if ((e = cudaMalloc(&c->consts, const_bytes)) != cudaSuccess) {
            c->consts = NULL;
            return e;
        }
    }
    for (uint32_t i = 0; i < ir->n_operands; i++) {
        const wnn_operand *o = &ir->operands[i];
        if (p->slots[i].kind != WNN_SLOT_CONSTANT) {
            continue;
        }
        uint64_t bytes = cu_core->desc_bytes(&o->desc);
        char *dst = (char *)c->consts + c->const_off[i];
        *what = "upload of a constant";
        if (o->tensor) {
            /* a constant MLTensor: device to device, after its creation
             * (queued earlier on the same stream) */
            e = cudaMemcpyAsync(dst, o->tensor->storage, bytes,
                                cudaMemcpyDeviceToDevice, b->stream);
        } else if (o->data) {
            e = stage_write(b, dst, o->data, bytes);
        }
        if (e != cudaSuccess) {
            return e;
        }
    }
    *what = "filter layout for cuDNN";
    for (uint32_t n = 0; n < c->n_nodes; n++) {
        const cu_node *cn = &c->nodes[n];
        if (cn->dnn && cn->dnn->frelayout == 1) {
            void *fin[2] = { NULL, (char *)c->consts + c->const_off[cn->node->in[1]] };
            void *fout[1] = { (char *)c->consts + cn->dnn->fprep_off };
            if ((e = run_view(b, &cn->dnn->fview, cn->dnn->fes, fin, fout)) !=
                cudaSuccess) {
                return e;
            }
        }
    }
    return cudaSuccess;
}

/* The arena and the scratch, allocated once (their addresses never change,
 * which graph replay relies on), then the uploads waited for. */
static cudaError_t
compile_memory(cu_backend *b, cu_compiled *c, const wnn_graph *g,
               const char **what)
{
    const wnn_plan *p = &g->plan;
    cudaError_t e;
    *what = "cudaMalloc (intermediates)";
    if (p->arena_bytes &&
        (e = cudaMalloc(&c->arena, p->arena_bytes)) != cudaSuccess) {
        c->arena = NULL;
        return e;
    }
    *what = "cudaMalloc (scratch)";
    if (c->scratch_bytes &&
        (e = cudaMalloc(&c->scratch, c->scratch_bytes)) != cudaSuccess) {
        c->scratch = NULL;
        return e;
    }
    *what = "upload of the constants";
    return cudaStreamSynchronize(b->stream);
}

/* Whether graph replay may capture the graph's dispatches: every step
 * only queues work on the stream (kernels, device-to-device copies,
 * cuBLAS and cuDNN calls on their handles bound to it, with workspaces
 * allocated at compile): no host synchronisation, allocation or pageable
 * copy.  A graph with nothing to run gains nothing from it. */
static bool
capturable(const wnn_graph *g, const cu_compiled *c)
{
    (void)c;
    return g->schedule.n_run + g->plan.n_copies > 0;
}

/* compile()'s work on the stream and the libraries' handles, with the
 * backend's cap_mu held: the per-step state (cuDNN's planning queries its
 * handle, which is bound to the stream), the constants' uploads, the
 * memory and the synchronisation; none of it may join, or break, a capture
 * that another thread runs on the stream (cu_internal.h).  Returns WNN_ERR
 * with err set, or WNN_OK with *e the CUDA error (*what: what failed). */
static wnn_status
compile_locked(cu_backend *b, cu_compiled *c, const wnn_graph *g,
               cudaError_t *e, const char **what, wnn_error *err)
{
    if (prep_nodes(b, c, g, err) != WNN_OK ||
        plan_producers(b, c, g, err) != WNN_OK) {
        return WNN_ERR;
    }
    c->ptr_in = calloc(c->max_io + 1, sizeof(void *));
    c->ptr_out = calloc(c->max_io + 1, sizeof(void *));
    /* the bindings of graph replay: captured, then previous, in + out */
    uint32_t nb = g->n_inputs + g->n_outputs;
    c->cap_in = calloc(2 * nb + 1, sizeof(void *));
    if (!c->ptr_in || !c->ptr_out || !c->cap_in) {
        *e = cudaErrorMemoryAllocation;
        *what = "host allocation"; /* (cu_compile: OutOfMemory) */
        return WNN_OK;
    }
    c->cap_out = c->cap_in + g->n_inputs;
    c->last_in = c->cap_in + nb;
    c->last_out = c->last_in + g->n_inputs;
    c->no_capture = b->graphs_off || !capturable(g, c);
    *e = upload_constants(b, c, g, what);
    if (*e == cudaSuccess) {
        *e = compile_memory(b, c, g, what);
    }
    return WNN_OK;
}

wnn_status
cu_compile(wnn_backend *be, const wnn_graph *g, void **out, wnn_error *err)
{
    cu_backend *b = cu_of(be);
    cudaError_t e = cudaSuccess;
    const char *what = "";
    cu_enter(b);
    cu_compiled *c = calloc(1, sizeof(*c));
    if (!c) {
        return cu_core->failk(err, WNN_OUT_OF_MEMORY, "build", NULL, NULL,
                              CU_OOM_MESSAGE);
    }
    pthread_mutex_init(&c->mu, NULL);
    c->const_off = calloc(g->ir->n_operands + 1, sizeof(uint64_t));
    c->nodes = calloc(g->schedule.n_steps + 1, sizeof(cu_node));
    if (!c->const_off || !c->nodes) {
        e = cudaErrorMemoryAllocation;
        what = "host allocation";
    }
    wnn_status st = WNN_OK;
    if (e == cudaSuccess) {
        pthread_mutex_lock(&b->cap_mu);
        st = compile_locked(b, c, g, &e, &what, err);
        pthread_mutex_unlock(&b->cap_mu);
    }
    if (st == WNN_OK && e == cudaSuccess) {
        *out = c;
        return WNN_OK;
    }
    cu_compiled_free(be, c); /* (takes cap_mu) */
    if (st != WNN_OK) {
        return WNN_ERR;
    }
    if (strcmp(what, "host allocation") == 0) {
        return cu_core->failk(err, WNN_OUT_OF_MEMORY, "build", NULL, NULL,
                              CU_OOM_MESSAGE);
    }
    return cuda_error(err, e == cudaErrorMemoryAllocation ? WNN_OUT_OF_MEMORY
                                                          : WNN_OPERATION_ERROR,
                      "build", NULL, e, what);
}

/* The schedule's run steps (g->schedule) in order, then the plan's output
 * copies: a producer with its epilogue or on cuDNN, or a node's kernel on
 * its operands resolved through the plan's slots.  Only queues work on the
 * stream, so that graph replay can capture it. */
static wnn_status
run_steps(cu_backend *b, const wnn_graph *g, cu_compiled *c, void *const *in,
          void *const *out, wnn_error *err)
{
    wnn_status st = WNN_OK;
    for (uint32_t i = 0; i < g->schedule.n_run && st == WNN_OK; i++) {
        cu_node *cn = &c->nodes[i];
        const wnn_step *s = cn->step;
        if (cn->dnn || cn->epi_on || s->epi) {
            st = run_fused(b, g, c, cn, in, out, err);
            continue;
        }
        for (uint32_t j = 0; j < s->n_in; j++) {
            c->ptr_in[j] = cu_resolve(g, c, s->in[j], in, out);
        }
        for (uint32_t j = 0; j < s->n_out; j++) {
            c->ptr_out[j] = cu_resolve(g, c, s->out[j], in, out);
        }
        st = run_node(b, cn, c->ptr_in, c->ptr_out, c->scratch, err);
    }
    for (uint32_t i = 0; i < g->plan.n_copies && st == WNN_OK; i++) {
        const wnn_output_copy *cp = &g->plan.copies[i];
        cudaError_t e = cudaMemcpyAsync(
            out[cp->to_output], out[cp->from_output],
            cu_core->desc_bytes(&g->outputs[cp->to_output].desc),
            cudaMemcpyDeviceToDevice, b->stream);
        if (e != cudaSuccess) {
            st = cuda_error(err, WNN_OPERATION_ERROR, "dispatch", NULL, e,
                            "copy of an output");
        }
    }
    return st;
}

/* ---- graph replay -------------------------------------------------------------
 * A host-bound dispatch (small batches: tens of launches of microseconds'
 * work each) costs the launches' CPU time; replaying them captured as one
 * CUDA graph costs one cudaGraphLaunch.  The policy, per compiled graph:
 *   - a dispatch with the bindings (in / out addresses) gexec was captured
 *     with: cudaGraphLaunch;
 *   - else one with the same bindings as the previous dispatch: the steps
 *     captured (cudaStreamBeginCapture, run_steps, cudaStreamEndCapture),
 *     gexec updated to the new graph (cudaGraphExecUpdate, cheap) or
 *     instantiated, then launched;
 *   - else (a first dispatch, new bindings): the steps run eagerly.
 * So a graph dispatched once never pays for a capture, and the one-time
 * work of a first run (cuDNN's fused call refused -> conv + epilogue,
 * cuBLAS's lazy set-up) has been done eagerly before any capture.  The
 * intermediates, scratch and constants never move after compile, so a
 * replay only depends on the bindings.  Fail safe: any error of the graph
 * API (or a step failing while captured) ends the capture, clears the
 * error, turns replay off for the graph (no_capture) and the dispatch
 * runs eagerly. */
static bool
same_bindings(const wnn_graph *g, void *const *a_in, void *const *a_out,
              void *const *in, void *const *out)
{
    for (uint32_t i = 0; i < g->n_inputs; i++) {
        if (a_in[i] != in[i]) {
            return false;
        }
    }
    for (uint32_t i = 0; i < g->n_outputs; i++) {
        if (a_out[i] != out[i]) {
            return false;
        }
    }
    return true;
}

/* Replay turned off for a graph: why, on stderr with
 * WEBNN_CUDA_GRAPHS_VERBOSE=1 (a GPU check can tell a graph that never
 * replays from one that does; the results are the same). */
static void
graph_off(const cu_backend *b, cu_compiled *c, const char *what,
          cudaError_t e, const wnn_error *step_err)
{
    if (b->graphs_verbose) {
        fprintf(stderr, "webnn cuda: graph replay off for a graph: %s failed: %s%s%s\n",
                what, step_err ? step_err->op : cudaGetErrorName(e),
                step_err ? ": " : "", step_err ? step_err->message : "");
    }
    c->no_capture = true;
    if (c->gexec) {
        cudaGraphExecDestroy(c->gexec);
        c->gexec = NULL;
    }
    cudaGetLastError(); /* the graph API's error is not the dispatch's */
}

/* After a failed capture: the stream out of capture mode (whatever failed),
 * the partial graph destroyed.  Called with b->cap_mu held. */
static void
capture_abort(cu_backend *b, cudaGraph_t graph)
{
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(b->stream, &cs) != cudaSuccess ||
        cs != cudaStreamCaptureStatusNone) {
        cudaGraph_t rest = NULL;
        if (cudaStreamEndCapture(b->stream, &rest) == cudaSuccess && rest) {
            cudaGraphDestroy(rest);
        }
    }
    if (graph) {
        cudaGraphDestroy(graph);
    }
    cudaGetLastError();
}

/* The steps captured into gexec (updated, else instantiated); false (with
 * replay turned off for the graph) when any of it failed. */
static bool
graph_capture(cu_backend *b, const wnn_graph *g, cu_compiled *c,
              void *const *in, void *const *out)
{
    wnn_error step_err; /* a step's error while captured: run eagerly */
    memset(&step_err, 0, sizeof(step_err));
    bool step_ok = true;
    const char *what = "cudaStreamBeginCapture";
    cudaGraph_t graph = NULL;
    cudaGetLastError(); /* an earlier error would fail a captured launch */
    pthread_mutex_lock(&b->cap_mu);
    cudaError_t e = cudaStreamBeginCapture(b->stream,
                                           cudaStreamCaptureModeThreadLocal);
    if (e == cudaSuccess) {
        step_ok = run_steps(b, g, c, in, out, &step_err) == WNN_OK;
        what = step_ok ? "cudaStreamEndCapture" : "a step while captured";
        e = cudaStreamEndCapture(b->stream, &graph);
        if (e == cudaSuccess && !graph) {
            e = cudaErrorUnknown;
        }
    }
    bool ok = e == cudaSuccess && step_ok;
    if (!ok) {
        capture_abort(b, graph);
    }
    pthread_mutex_unlock(&b->cap_mu);
    if (!ok) {
        graph_off(b, c, what, e, step_ok ? NULL : &step_err);
        return false;
    }
    if (c->gexec) {
        cudaGraphExecUpdateResultInfo info;
        memset(&info, 0, sizeof(info));
        if (cudaGraphExecUpdate(c->gexec, graph, &info) != cudaSuccess) {
            /* another topology (cuDNN picked other kernels, say) */
            cudaGraphExecDestroy(c->gexec);
            c->gexec = NULL;
            cudaGetLastError();
        }
    }
    if (!c->gexec &&
        (e = cudaGraphInstantiate(&c->gexec, graph, 0)) != cudaSuccess) {
        c->gexec = NULL;
        ok = false;
    }
    cudaGraphDestroy(graph);
    if (!ok) {
        graph_off(b, c, "cudaGraphInstantiate", e, NULL);
        return false;
    }
    memcpy(c->cap_in, in, g->n_inputs * sizeof(void *));
    memcpy(c->cap_out, out, g->n_outputs * sizeof(void *));
    return true;
}

/* The dispatch as a replay of gexec when the policy above says so: true
 * when it was queued, false when the steps must run eagerly. */
static bool
graph_dispatch(cu_backend *b, const wnn_graph *g, cu_compiled *c,
               void *const *in, void *const *out)
{
    if (c->no_capture) {
        return false;
    }
    bool captured = c->gexec && same_bindings(g, c->cap_in, c->cap_out, in, out);
    if (!captured) {
        if (!c->has_last ||
            !same_bindings(g, c->last_in, c->last_out, in, out) ||
            !graph_capture(b, g, c, in, out)) {
            return false;
        }
    }
    cudaError_t e = cudaGraphLaunch(c->gexec, b->stream);
    if (e != cudaSuccess) {
        graph_off(b, c, "cudaGraphLaunch", e, NULL);
        return false;
    }
    return true;
}

/* execute(): the steps replayed as a CUDA graph, or run. */
wnn_status
cu_execute(wnn_backend *be, const wnn_graph *g, void *compiled,
           void *const *in, void *const *out, wnn_error *err)
{
    cu_backend *b = cu_of(be);
    cu_compiled *c = compiled;
    wnn_status st = WNN_OK;
    cu_enter(b);
    pthread_mutex_lock(&c->mu);
    if (!graph_dispatch(b, g, c, in, out)) {
        st = run_steps(b, g, c, in, out, err);
    }
    if (!c->no_capture) {
        memcpy(c->last_in, in, g->n_inputs * sizeof(void *));
        memcpy(c->last_out, out, g->n_outputs * sizeof(void *));
        c->has_last = st == WNN_OK;
    }
    pthread_mutex_unlock(&c->mu);
    return st;
}

/* ---- running one node (at execute) ------------------------------------------- */
/* The run launcher of each kind (cuda_ops.h's CU_KIND rows, in the
 * families' .cu files); NULL for the service kinds, which run_node calls
 * by name. */
static cudaError_t (*const cu_run[K_COUNT])(const cu_launch_args *) = {
#define CU_OP(ID, kind, code)
#define CU_KIND(KIND, run, dtypes) [K_##KIND] = run,
#include "cuda_ops.h"
#undef CU_OP
#undef CU_KIND
};

/* A node's kernels: the service kinds on the backend's own services
 * (cuBLAS, its view copies), every other kind through its run launcher,
 * which takes the node's lowered block (g->lowered) as it is and its
 * extras (cn->ka, cn->x: cu_ops.c prep_node). */
wnn_status
run_node(cu_backend *b, const cu_node *cn, void *const *in, void *const *out,
         void *scratch, wnn_error *err)
{
    cudaError_t e = cudaSuccess;
    switch (cn->kind) { /* the service kinds (CU_SERVICE_KIND) */
    case K_MATMUL: return run_matmul(b, cn, in, out, scratch, err);
    case K_GEMM: return run_gemm(b, cn, in, out, scratch, err);
    case K_RNN: return run_rnn(b, cn, in, out, scratch, err);
    case K_VIEWS: {
        const wnn_views_params *v = &cn->lowered->u.views;
        for (uint32_t j = 0; j < v->n && e == cudaSuccess; j++) {
            e = run_view(b, &v->v[j], cn->ka.es, in, out);
        }
        break;
    }
    default: {
        if ((unsigned)cn->kind >= K_COUNT || !cu_run[cn->kind]) {
            return cu_core->failk(err, WNN_NOT_SUPPORTED,
                                  cu_core->op_get(cn->node->op)->camel,
                                  cn->node->label, NULL, "no CUDA kernel");
        }
        const cu_launch_args a = { &cn->ka, cn->lowered, &cn->x, in, out,
                                   scratch, b->stream };
        e = cu_run[cn->kind](&a);
        break;
    }
    }
    if (e != cudaSuccess) {
        return cuda_error(err, WNN_OPERATION_ERROR,
                          cu_core->op_get(cn->node->op)->camel, cn->node->label, e,
                          "kernel launch");
    }
    return WNN_OK;
}

/* ---- fused chains: a producer (conv2d, convTranspose2d, matmul, gemm) run
 * with its chain (bias, add, activation) at the chain's last node; the
 * chains come from the core's pipeline (g->fusion) ---------------------- */
/* A producer with its epilogue (bias, fused add, activation) or a
 * convolution on cuDNN: writes cn->result. */
wnn_status
run_fused(cu_backend *b, const wnn_graph *g, cu_compiled *c, cu_node *cn,
          void *const *in, void *const *out, wnn_error *err)
{
    const wnn_node *node = cn->node;
    for (uint32_t j = 0; j < node->n_in; j++) {
        c->ptr_in[j] = cu_resolve(g, c, node->in[j], in, out);
    }
    void *y = cu_resolve(g, c, cn->result, in, out);
    const void *addend = cn->addend != UINT32_MAX
                             ? cu_resolve(g, c, cn->addend, in, out) : NULL;
    c->ptr_out[0] = y;
    bool done = false;
    wnn_status st;
    if (cn->dnn) {
        st = run_dnn(b, c, cn, c->ptr_in, y, addend, c->scratch, &done, err);
    } else {
        st = run_node(b, cn, c->ptr_in, c->ptr_out, c->scratch, err);
    }
    if (st != WNN_OK || done || !cn->epi_on) {
        return st;
    }
    const void *b1 = cn->epi.bias ? c->ptr_in[cn->x.bias - 1] : NULL;
    cudaError_t e = ck_epilogue(&cn->epi, b1, addend, y, b->stream);
    if (e != cudaSuccess) {
        return cuda_error(err, WNN_OPERATION_ERROR, cu_core->op_get(node->op)->camel,
                          node->label, e, "kernel launch");
    }
    return WNN_OK;
}
