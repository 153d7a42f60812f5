/* fuzz_builder.c -- a libFuzzer harness over the core's builder API.
 *
 * Every fuzz input is decoded into a random program against the public C
 * API (webnn_core.h): a few inputs and constants with random descriptors,
 * then a sequence of operators taken from the whole registry (wnn_op_get:
 * any operator of ops.def, so operators added later are fuzzed too) with
 * random operands and random options -- every field of the operator's field
 * table (wnn_options_default, then random numbers, booleans, enum indices,
 * lists of random length, operand-valued options, positional values) -- then
 * build() of random outputs and, when the graph is small, tensors with random
 * data, dispatch, read and destroy on a CPU context.
 *
 * What must hold, whatever the input: no crash, no sanitizer report (ASan,
 * UBSan, LeakSanitizer), and these invariants, checked with abort():
 *   - a failing call fills its wnn_error (a kind, a non-empty message) and an
 *     operator's TypeError names the operator;
 *   - a successful operator gives outputs with valid descriptors (rank <= 8,
 *     every dimension and the element count valid dimensions) and a byte
 *     length within the context's limit.
 *
 * The C API trusts its caller for what the IDL's types guarantee (an enum
 * holds one of its values, a data type is a data type, options points to the
 * operator's options struct, MLNumber doubles may be NaN but IDL doubles are
 * finite): the harness keeps to that contract, as the Python layer does.
 *
 * Build and run: `make fuzz` (bounded), `make fuzz-long`; crash inputs go to
 * csrc/fuzz/regressions/, which `make fuzz` replays first.  Built with
 * -DWNN_FUZZ_STANDALONE (any C compiler, no libFuzzer) it is a replayer:
 * `fuzz_replay FILE|DIR...` runs every input once; `make test-c` replays the
 * regressions and the corpus that way and `make leakcheck` under valgrind. */
#include <dirent.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webnn_core.h"

/* ---- the byte stream ------------------------------------------------------ */
typedef struct rd {
    const uint8_t *p;
    size_t n;
} rd;

static uint8_t
u8(rd *r)
{
    if (r->n == 0) {
        return 0;
    }
    r->n--;
    return *r->p++;
}

static uint32_t
u32(rd *r)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        v = (v << 8) | u8(r);
    }
    return v;
}

static uint64_t
u64(rd *r)
{
    return ((uint64_t)u32(r) << 32) | u32(r);
}

/* 0 .. n-1 */
static uint32_t
pick(rd *r, uint32_t n)
{
    if (n <= 1) {
        return 0;
    }
    if (n <= 256) {
        return u8(r) % n;
    }
    return ((uint32_t)u8(r) << 8 | u8(r)) % n;
}

/* true with probability about k/256 */
static bool
chance(rd *r, unsigned k)
{
    return u8(r) < k;
}

/* Mostly small values (what valid calls use), sometimes the edges. */
static uint32_t
some_u32(rd *r)
{
    static const uint32_t edges[] = {
        0, 1, 2, 3, 4, 7, 8, 9, 16, 63, 64, 65, 255, 256, 8192, 8193,
        65535, 65536, 0x7fffffffu, 0x80000000u, 0xfffffffeu, 0xffffffffu,
    };
    uint8_t b = u8(r);
    if (b < 200) {
        return b % 6;
    }
    if (b < 240) {
        return edges[pick(r, sizeof(edges) / sizeof(edges[0]))];
    }
    return u32(r);
}

static int32_t
some_i32(rd *r)
{
    uint8_t b = u8(r);
    if (b < 200) {
        return (int32_t)(b % 9) - 4;
    }
    if (b < 240) {
        static const int32_t edges[] = { INT32_MIN, INT32_MIN + 1, -65536, -8,
                                         8, 65536, INT32_MAX - 1, INT32_MAX };
        return edges[pick(r, 8)];
    }
    return (int32_t)u32(r);
}

static double
some_double(rd *r)
{
    static const double v[] = { 0.0, -0.0, 1.0, -1.0, 0.5, 0.2, 0.01, 1e-5,
                                3.0, -2.5, 65504.0, 65520.0, 1e38, 3.5e38,
                                -3.5e38, 1e300, -1e300, 5e-324, 1e-40 };
    uint8_t b = u8(r);
    if (b < 230) {
        return v[b % (sizeof(v) / sizeof(v[0]))];
    }
    uint64_t bits = u64(r);
    double d;
    memcpy(&d, &bits, 8);
    return isfinite(d) ? d : 1.0;
}

/* MLNumber: a double (NaN and infinities allowed) or an exact integer. */
static wnn_number
some_number(rd *r)
{
    wnn_number n;
    memset(&n, 0, sizeof(n));
    n.present = true;
    uint8_t b = u8(r);
    if (b < 100) {
        n.d = some_double(r);
    } else if (b < 130) {
        static const double sp[] = { NAN, INFINITY, -INFINITY, -0.0 };
        n.d = sp[pick(r, 4)];
    } else {
        n.is_int = true;
        n.is_neg = chance(r, 100);
        uint8_t k = u8(r);
        n.mag = k < 200 ? k % 300 : u64(r);
        if (n.mag == 0) {
            n.is_neg = false;
        }
        n.d = n.is_neg ? -(double)n.mag : (double)n.mag;
    }
    return n;
}

/* ---- invariants ----------------------------------------------------------- */
static void
die(const char *what, const wnn_error *err)
{
    char buf[512] = "";
    if (err) {
        wnn_error_format(err, buf, sizeof(buf));
    }
    fprintf(stderr, "fuzz_builder: invariant broken: %s [%s]\n", what, buf);
    abort();
}

static void
check_failed(const wnn_error *err, const char *op)
{
    if (err->kind == WNN_NO_ERROR || err->message[0] == '\0') {
        die("a failure without an error kind or message", err);
    }
    if (op && err->kind == WNN_TYPE_ERROR && err->op[0] &&
        strcmp(err->op, op) != 0 && strcmp(err->op, "MLGraphBuilder") != 0) {
        die("an operator's TypeError names another operator", err);
    }
}

static void
check_desc(wnn_context *ctx, const wnn_desc *d)
{
    uint64_t n = 1;
    if ((unsigned)d->dtype >= WNN_DTYPE_COUNT || d->rank > WNN_MAX_RANK) {
        die("an output descriptor with a bad data type or rank", NULL);
    }
    for (uint32_t i = 0; i < d->rank; i++) {
        if (d->shape[i] == 0 || d->shape[i] > WNN_MAX_DIM) {
            die("an output dimension that is not a valid dimension", NULL);
        }
        n *= d->shape[i];
        if (n > WNN_MAX_DIM) {
            die("an output element count above 2^31 - 1", NULL);
        }
    }
    if (n * wnn_dtype_size(d->dtype) > wnn_context_max_tensor_bytes(ctx)) {
        die("an output byte length above maxTensorByteLength", NULL);
    }
}

/* ---- statistics (WNN_FUZZ_STATS=1: printed at exit) ------------------------ */
static unsigned long stat_op_tried[WNN_OP_COUNT], stat_op_ok[WNN_OP_COUNT];
static unsigned long stat_built, stat_dispatched, stat_ran_ok;

static void
print_stats(void)
{
    fprintf(stderr, "fuzz_builder: %lu graphs built, %lu dispatched, %lu "
                    "ran without error\n", stat_built, stat_dispatched,
            stat_ran_ok);
    for (int op = 0; op < WNN_OP_COUNT; op++) {
        fprintf(stderr, "  %-24s %8lu tried %8lu built\n",
                wnn_op_get((wnn_op)op)->camel, stat_op_tried[op],
                stat_op_ok[op]);
    }
}

/* ---- the program ---------------------------------------------------------- */
#define MAX_POOL 64
#define EXEC_BYTES (1u << 20)   /* run graphs whose operands fit in this */

typedef struct prog {
    wnn_context *ctx;
    wnn_builder *b;
    uint32_t pool[MAX_POOL];    /* operand ids made so far */
    uint32_t n_pool;
    uint32_t nodes[MAX_POOL];   /* ids that operators made (build outputs) */
    uint32_t n_nodes;
    uint32_t n_inputs;
    uint64_t total_bytes;       /* of every operand made */
} prog;

static void
add_pool(prog *p, uint32_t id, bool node)
{
    const wnn_desc *d = wnn_builder_operand_desc(p->b, id);
    if (d) {
        p->total_bytes += wnn_desc_bytes(d);
    }
    if (p->n_pool < MAX_POOL) {
        p->pool[p->n_pool++] = id;
    }
    if (node && p->n_nodes < MAX_POOL) {
        p->nodes[p->n_nodes++] = id;
    }
}

/* An operand id: mostly one of the pool, sometimes one this builder never
 * made (the core must reject it, not read past its arrays). */
static uint32_t
some_operand(prog *p, rd *r)
{
    if (p->n_pool == 0 || chance(r, 6)) {
        return chance(r, 128) ? 0xffffffffu : p->n_pool + 1000 + u8(r);
    }
    /* favour recent operands: chains of operators */
    uint32_t k = pick(r, p->n_pool);
    if (chance(r, 128)) {
        k = p->n_pool - 1 - pick(r, p->n_pool < 4 ? p->n_pool : 4);
    }
    return p->pool[k];
}

static wnn_desc
some_desc(rd *r, uint32_t max_elems)
{
    wnn_desc d;
    memset(&d, 0, sizeof(d));
    d.dtype = (wnn_dtype)pick(r, WNN_DTYPE_COUNT);
    uint8_t rb = u8(r);
    d.rank = rb < 200 ? rb % 5 : rb % (WNN_MAX_RANK + 1);
    uint64_t n = 1;
    bool big = max_elems > 4096;
    for (uint32_t i = 0; i < d.rank; i++) {
        uint32_t dim = big ? 1 + pick(r, 300) : 1 + pick(r, 6);
        if (n * dim > max_elems) {
            dim = 1;
        }
        d.shape[i] = dim;
        n *= dim;
    }
    return d;
}

/* A descriptor the core must reject (or accept) at its edges. */
static wnn_desc
hostile_desc(rd *r)
{
    wnn_desc d;
    memset(&d, 0, sizeof(d));
    d.dtype = (wnn_dtype)pick(r, WNN_DTYPE_COUNT);
    d.rank = pick(r, WNN_MAX_RANK + 1);
    for (uint32_t i = 0; i < d.rank; i++) {
        d.shape[i] = some_u32(r);
    }
    return d;
}

/* A new input that fits operand `k` of the operator's limits table (one of
 * its data types, a rank in its range) and whose shape derives from the
 * first operand's, so that multi-operand operators (matmul, gemm,
 * quantizeLinear, batchNormalization...) get valid calls often. */
static uint32_t
fresh_operand(prog *p, rd *r, const wnn_op_limits *lim, uint32_t k,
              const wnn_desc *first)
{
    wnn_desc d;
    memset(&d, 0, sizeof(d));
    const wnn_operand_limit *e = k < lim->n_inputs ? &lim->e[k] : NULL;
    uint16_t mask = e ? e->dtypes : WNN_DT_ANY;
    if (first && chance(r, 128) && (mask & WNN_DT(first->dtype))) {
        d.dtype = first->dtype;
    } else {
        uint32_t cnt = 0, want;
        for (int t = 0; t < WNN_DTYPE_COUNT; t++) {
            cnt += (mask >> t) & 1;
        }
        want = pick(r, cnt ? cnt : 1);
        d.dtype = WNN_FLOAT32;
        for (int t = 0; t < WNN_DTYPE_COUNT; t++) {
            if (((mask >> t) & 1) && want-- == 0) {
                d.dtype = (wnn_dtype)t;
                break;
            }
        }
    }
    uint32_t lo = e ? e->rank_min : 0, hi = e ? e->rank_max : 4;
    if (hi > lo + 4) {
        hi = lo + 4;
    }
    uint8_t how = u8(r) % 6;
    if (first && how < 4) {
        /* first's shape: whole, a suffix, its last two swapped, or one
         * dimension (mean, scale, bias...) */
        d.rank = first->rank;
        memcpy(d.shape, first->shape, sizeof(d.shape));
        if (how == 1 && d.rank > 0) {
            uint32_t drop = pick(r, d.rank + 1);
            d.rank -= drop;
            memmove(d.shape, first->shape + drop, d.rank * sizeof(uint32_t));
        } else if (how == 2 && d.rank >= 2) {
            uint32_t t = d.shape[d.rank - 1];
            d.shape[d.rank - 1] = d.shape[d.rank - 2];
            d.shape[d.rank - 2] = t;
        } else if (how == 3) {
            d.rank = 1;
            d.shape[0] = first->rank ? first->shape[pick(r, first->rank)] : 1;
        }
        if (chance(r, 40) && d.rank) {
            d.shape[pick(r, d.rank)] = 1; /* a broadcastable 1 */
        }
    } else {
        d.rank = lo + pick(r, hi - lo + 1);
        for (uint32_t i = 0; i < d.rank; i++) {
            d.shape[i] = 1 + pick(r, 4);
        }
    }
    if (wnn_desc_elements(&d) > 4096) {
        for (uint32_t i = 0; i < d.rank; i++) {
            d.shape[i] = 1;
        }
    }
    char name[16];
    snprintf(name, sizeof(name), "in%u", p->n_inputs++);
    uint32_t id;
    wnn_error err;
    if (wnn_builder_input(p->b, name, &d, &id, &err) != WNN_OK) {
        check_failed(&err, NULL);
        return some_operand(p, r);
    }
    add_pool(p, id, false);
    return id;
}

static void
fill_bytes(rd *r, unsigned char *buf, size_t n)
{
    /* the tail of the input, repeated; zeros when it is exhausted */
    uint8_t seed = u8(r);
    for (size_t i = 0; i < n; i++) {
        buf[i] = r->n ? r->p[i % r->n] : (uint8_t)(seed + i * 131);
    }
}

static void
make_input(prog *p, rd *r, bool hostile)
{
    /* now and then large enough for the kernels' threaded paths */
    wnn_desc d = hostile ? hostile_desc(r)
                         : some_desc(r, chance(r, 16) ? 65536 : 4096);
    char name[16];
    snprintf(name, sizeof(name), "in%u", p->n_inputs++);
    if (chance(r, 4)) {
        name[0] = '\0'; /* empty names are a TypeError */
    } else if (chance(r, 4) && p->n_inputs > 1) {
        snprintf(name, sizeof(name), "in0"); /* a duplicate name */
    }
    uint32_t id;
    wnn_error err;
    if (wnn_builder_input(p->b, name, &d, &id, &err) == WNN_OK) {
        check_desc(p->ctx, &d);
        add_pool(p, id, false);
    } else {
        check_failed(&err, NULL);
    }
}

static void
make_constant(prog *p, rd *r)
{
    wnn_error err;
    uint32_t id;
    uint8_t how = u8(r) % 4;
    if (how == 0) {
        wnn_number v = some_number(r);
        if (wnn_builder_constant_scalar(p->b, (wnn_dtype)pick(r, WNN_DTYPE_COUNT),
                                        &v, &id, &err) == WNN_OK) {
            add_pool(p, id, false);
        } else {
            check_failed(&err, NULL);
        }
        return;
    }
    wnn_desc d = how == 3 && chance(r, 64) ? hostile_desc(r) : some_desc(r, 1024);
    wnn_status st = wnn_desc_check(p->ctx, &d, "constant", "descriptor", &err);
    if (st != WNN_OK) {
        /* the core must reject it with any claimed byte length */
        unsigned char one = 0;
        if (wnn_builder_constant(p->b, &d, &one, 1, &id, &err) == WNN_OK) {
            die("a constant with an invalid descriptor was accepted", NULL);
        }
        check_failed(&err, NULL);
        return;
    }
    size_t bytes = (size_t)wnn_desc_bytes(&d);
    if (bytes > EXEC_BYTES) {
        return; /* valid, but too large to bother */
    }
    unsigned char *buf = malloc(bytes + 1);
    if (!buf) {
        return;
    }
    fill_bytes(r, buf, bytes);
    size_t claimed = chance(r, 8) ? bytes + 1 : bytes; /* a wrong length */
    if (how == 2) {
        /* a constant MLTensor */
        wnn_tensor *t = NULL;
        bool constant = !chance(r, 16);
        st = wnn_tensor_create(p->ctx, &d, false, false, constant ? buf : NULL,
                               &t, &err);
        if (st == WNN_OK) {
            if (chance(r, 16)) {
                wnn_tensor_destroy(t); /* build() must reject it later */
            }
            if (wnn_builder_constant_tensor(p->b, t, &id, &err) == WNN_OK) {
                add_pool(p, id, false);
            } else {
                check_failed(&err, NULL);
            }
            wnn_tensor_release(t); /* the builder holds its own reference */
        } else {
            check_failed(&err, NULL);
        }
    } else if (wnn_builder_constant(p->b, &d, buf, claimed, &id, &err) == WNN_OK) {
        if (claimed != bytes) {
            die("a constant with a wrong byte length was accepted", NULL);
        }
        add_pool(p, id, false);
    } else {
        check_failed(&err, NULL);
    }
    free(buf);
}

/* Random value for one field of an options struct. */
static void
set_field(prog *p, rd *r, const wnn_field *f, void *opts,
          const wnn_desc *first, const wnn_op_limits *lim)
{
    uint32_t rank_hint = first->rank;
    void *dst = (char *)opts + f->offset;
    switch (f->type) {
    case WNN_F_DOUBLE:
        *(double *)dst = some_double(r);
        break;
    case WNN_F_NUMBER:
        *(wnn_number *)dst = some_number(r);
        break;
    case WNN_F_BOOL:
        *(bool *)dst = u8(r) & 1;
        break;
    case WNN_F_U32:
        *(uint32_t *)dst = some_u32(r);
        break;
    case WNN_F_I32:
        *(int32_t *)dst = some_i32(r);
        break;
    case WNN_F_DTYPE:
        *(wnn_dtype *)dst = (wnn_dtype)pick(r, WNN_DTYPE_COUNT);
        break;
    case WNN_F_ENUM: {
        uint32_t n = 0;
        while (f->enum_values && f->enum_values[n]) {
            n++;
        }
        *(int *)dst = (int)pick(r, n);
        break;
    }
    case WNN_F_U32_LIST:
    case WNN_F_I32_LIST:
    case WNN_F_ENUM_LIST: {
        wnn_u32_list *l = dst;
        uint8_t lb = u8(r);
        /* mostly as many items as the first operand's rank */
        uint32_t n = lb < 160 ? rank_hint : lb < 240 ? lb % 10 : some_u32(r) % 300;
        uint32_t n_enum = 0;
        while (f->enum_values && f->enum_values[n_enum]) {
            n_enum++;
        }
        l->v = wnn_builder_alloc(p->b, sizeof(uint32_t) * (n + 1));
        if (!l->v) {
            l->n = 0;
            l->present = false;
            return;
        }
        l->n = n;
        l->present = true;
        /* union types such as split's: one integer, not a sequence */
        l->scalar = f->type == WNN_F_U32_LIST && chance(r, 24);
        if (l->scalar) {
            l->n = 1;
        }
        /* shapes and axes that fit the first operand, often */
        uint8_t mode = f->type == WNN_F_U32_LIST && !l->scalar ? u8(r) % 5 : 0;
        uint64_t prod = wnn_desc_elements(first);
        for (uint32_t i = 0; i < l->n; i++) {
            if (mode == 1) { /* its shape (reshape, expand, sizes) */
                l->v[i] = i < first->rank ? first->shape[i] : 1 + pick(r, 3);
                continue;
            }
            if (mode == 2) { /* a permutation of its axes */
                l->v[i] = (i + (l->n ? u8(r) % l->n : 0)) % (l->n ? l->n : 1);
                for (uint32_t j = 0; j < i; j++) {
                    if (l->v[j] == l->v[i]) {
                        l->v[i] = i;
                    }
                }
                continue;
            }
            if (mode == 3) { /* its element count, flattened */
                l->v[i] = i == 0 ? (uint32_t)prod : 1;
                continue;
            }
            if (f->type == WNN_F_I32_LIST) {
                int32_t v = some_i32(r);
                memcpy(&l->v[i], &v, 4);
            } else if (f->type == WNN_F_ENUM_LIST) {
                l->v[i] = pick(r, n_enum);
            } else {
                l->v[i] = some_u32(r);
            }
        }
        break;
    }
    default:
        break; /* a kind this harness does not know yet: the default */
    case WNN_F_OPERAND: {
        uint32_t k = lim->n_inputs;
        for (uint32_t i = 0; i < lim->n_inputs; i++) {
            if (strcmp(lim->e[i].name, f->camel) == 0) {
                k = i;
            }
        }
        if (chance(r, 32)) {
            *(uint32_t *)dst = 0;
        } else if (chance(r, 128)) {
            *(uint32_t *)dst = fresh_operand(p, r, lim, k, first) + 1;
        } else {
            *(uint32_t *)dst = some_operand(p, r) + 1;
        }
        break;
    }
    }
}

/* ---- shape recipes --------------------------------------------------------- */
/* Some operators need operands that agree in ways random shapes almost never
 * do: the recurrent networks (gru, gruCell, lstm, lstmCell: weights of
 * [directions,] gates * hiddenSize rows...).  For about half of their calls
 * the positional operands, steps, hiddenSize, direction and the
 * operand-valued options get consistent shapes (the other options stay
 * random), so that their checkers pass and their kernels run.  Operators
 * are found by name: the recipes apply once the operators are merged. */
static const wnn_field *
field_named(const wnn_op_info *info, const char *camel)
{
    for (uint32_t i = 0; i < info->fields->n; i++) {
        if (strcmp(info->fields->f[i].camel, camel) == 0) {
            return &info->fields->f[i];
        }
    }
    return NULL;
}

static uint32_t
new_input(prog *p, wnn_dtype t, uint32_t rank, const uint32_t *shape)
{
    wnn_desc d;
    memset(&d, 0, sizeof(d));
    d.dtype = t;
    d.rank = rank;
    memcpy(d.shape, shape, rank * sizeof(uint32_t));
    char name[16];
    snprintf(name, sizeof(name), "in%u", p->n_inputs++);
    uint32_t id = 0;
    wnn_error err;
    if (wnn_builder_input(p->b, name, &d, &id, &err) != WNN_OK) {
        die("a recipe's input was rejected", &err);
    }
    add_pool(p, id, false);
    return id;
}

static void
set_u32(const wnn_op_info *info, void *opts, const char *camel, uint32_t v)
{
    const wnn_field *f = field_named(info, camel);
    if (f && f->type == WNN_F_U32) {
        *(uint32_t *)((char *)opts + f->offset) = v;
    }
}

static void
set_operand(prog *p, rd *r, const wnn_op_info *info, void *opts,
            const char *camel, wnn_dtype t, uint32_t rank, const uint32_t *sh)
{
    const wnn_field *f = field_named(info, camel);
    if (f && f->type == WNN_F_OPERAND) {
        *(uint32_t *)((char *)opts + f->offset) =
            chance(r, 128) ? new_input(p, t, rank, sh) + 1 : 0;
    }
}

static bool
recurrent_recipe(prog *p, rd *r, const wnn_op_info *info, uint32_t *ids,
                 uint32_t *n, void *opts)
{
    const char *nm = info->camel;
    uint32_t g = strcmp(nm, "gru") == 0 || strcmp(nm, "gruCell") == 0 ? 3
               : strcmp(nm, "lstm") == 0 || strcmp(nm, "lstmCell") == 0 ? 4
                                                                     : 0;
    if (!g || !chance(r, 128)) {
        return false;
    }
    bool cell = strstr(nm, "Cell") != NULL;
    uint32_t N = 1 + pick(r, 3), I = 1 + pick(r, 5), H = 1 + pick(r, 5);
    uint32_t S = 1 + pick(r, 3), D = cell ? 1 : 1 + pick(r, 2);
    wnn_dtype t = chance(r, 170) ? WNN_FLOAT32 : WNN_FLOAT16;
    uint32_t k = 0;
    if (cell) {
        ids[k++] = new_input(p, t, 2, (uint32_t[]){ N, I });
        ids[k++] = new_input(p, t, 2, (uint32_t[]){ g * H, I });
        ids[k++] = new_input(p, t, 2, (uint32_t[]){ g * H, H });
        ids[k++] = new_input(p, t, 2, (uint32_t[]){ N, H });
        if (g == 4) {
            ids[k++] = new_input(p, t, 2, (uint32_t[]){ N, H });
        }
        set_operand(p, r, info, opts, "bias", t, 1, (uint32_t[]){ g * H });
        set_operand(p, r, info, opts, "recurrentBias", t, 1, (uint32_t[]){ g * H });
        set_operand(p, r, info, opts, "peepholeWeight", t, 1, (uint32_t[]){ 3 * H });
    } else {
        ids[k++] = new_input(p, t, 3, (uint32_t[]){ S, N, I });
        ids[k++] = new_input(p, t, 3, (uint32_t[]){ D, g * H, I });
        ids[k++] = new_input(p, t, 3, (uint32_t[]){ D, g * H, H });
        set_u32(info, opts, "steps", S);
        set_operand(p, r, info, opts, "bias", t, 2, (uint32_t[]){ D, g * H });
        set_operand(p, r, info, opts, "recurrentBias", t, 2, (uint32_t[]){ D, g * H });
        set_operand(p, r, info, opts, "peepholeWeight", t, 2, (uint32_t[]){ D, 3 * H });
        set_operand(p, r, info, opts, "initialHiddenState", t, 3, (uint32_t[]){ D, N, H });
        set_operand(p, r, info, opts, "initialCellState", t, 3, (uint32_t[]){ D, N, H });
        const wnn_field *f = field_named(info, "direction");
        if (f && f->type == WNN_F_ENUM && f->enum_values) {
            const char *want = D == 2 ? "both" : chance(r, 128) ? "forward" : "backward";
            for (int i = 0; f->enum_values[i]; i++) {
                if (strcmp(f->enum_values[i], want) == 0) {
                    *(int *)((char *)opts + f->offset) = i;
                }
            }
        }
    }
    set_u32(info, opts, "hiddenSize", H);
    *n = k;
    return true;
}

static void
make_op(prog *p, rd *r)
{
    wnn_op op = (wnn_op)pick(r, WNN_OP_COUNT);
    const wnn_op_info *info = wnn_op_get(op);
    const wnn_op_params *ps = wnn_op_params_get(op); /* the parsed signature */
    int seq = ps->seq;
    uint32_t n_pos = ps->n_operands;
    uint32_t ids[96];
    uint32_t n = 0;
    wnn_desc first;
    bool have_first = false;
    for (uint32_t i = 0; i < n_pos; i++) {
        uint32_t cnt = 1;
        if ((int)i == seq) {
            uint8_t k = u8(r);
            cnt = k < 230 ? 1 + k % 4 : k % 64; /* 0 items sometimes */
        }
        for (uint32_t j = 0; j < cnt && n < 90; j++) {
            if (chance(r, 100)) {
                ids[n] = fresh_operand(p, r, info->limits, i,
                                       have_first ? &first : NULL);
            } else {
                ids[n] = some_operand(p, r);
            }
            const wnn_desc *d = wnn_builder_operand_desc(p->b, ids[n]);
            if (n == 0 && d) {
                first = *d;
                have_first = true;
            }
            n++;
        }
    }
    if (chance(r, 6)) {
        n = n ? n - 1 : n + 1; /* a wrong number of operands */
    }
    if (!have_first) {
        memset(&first, 0, sizeof(first));
    }
    void *opts = calloc(1, info->options_size + 8);
    if (!opts) {
        return;
    }
    wnn_options_default(op, opts);
    for (uint32_t i = 0; i < info->fields->n; i++) {
        const wnn_field *f = &info->fields->f[i];
        /* positional values (%axis, %newShape) are usually given */
        bool positional = false;
        for (uint32_t k = 0; k < ps->n; k++) {
            if (ps->p[k].kind == WNN_PARAM_VALUE && ps->p[k].field == (int)i) {
                positional = true;
            }
        }
        if (chance(r, positional ? 230 : 90)) {
            set_field(p, r, f, opts, &first, info->limits);
        }
    }
    recurrent_recipe(p, r, info, ids, &n, opts);
    char label[80];
    const char *lbl = NULL;
    uint8_t lb = u8(r);
    if (lb < 64) {
        snprintf(label, sizeof(label), "L%u", lb);
        lbl = label;
    } else if (lb < 72) {
        /* control and bidirectional characters, and a long label */
        static const char *const odd[] = {
            "a\nb\x1b[31m", "\xe2\x80\xae" "evil", "\xc2\x85x",
            "0123456789012345678901234567890123456789012345678901234567890123456789",
        };
        lbl = odd[lb % 4];
    }
    uint32_t outs[64], n_out = 0;
    stat_op_tried[op]++;
    uint32_t max_out = chance(r, 4) ? 0 : 64;
    wnn_error err;
    if (wnn_builder_op(p->b, op, ids, n, opts, lbl, outs, max_out, &n_out,
                       &err) == WNN_OK) {
        stat_op_ok[op]++;
        if (n_out == 0 || n_out > max_out) {
            die("an operator gave no outputs or too many", NULL);
        }
        for (uint32_t i = 0; i < n_out; i++) {
            const wnn_desc *d = wnn_builder_operand_desc(p->b, outs[i]);
            if (!d) {
                die("an output id without a descriptor", NULL);
            }
            check_desc(p->ctx, d);
            add_pool(p, outs[i], true);
        }
    } else {
        check_failed(&err, info->camel);
    }
    free(opts);
}

/* Run a built graph with random data; tensors are destroyed afterwards. */
static void
run_graph(prog *p, rd *r, wnn_graph *g)
{
    wnn_context *c = p->ctx;
    uint32_t ni = wnn_graph_num_inputs(g), no = wnn_graph_num_outputs(g);
    wnn_tensor *t[2 * MAX_POOL + 2] = { NULL };
    const char *names[2 * MAX_POOL + 2];
    wnn_error err;
    bool ok = true;
    for (uint32_t i = 0; i < ni + no && ok; i++) {
        bool in = i < ni;
        const wnn_desc *d = in ? wnn_graph_input_desc(g, i)
                               : wnn_graph_output_desc(g, i - ni);
        names[i] = in ? wnn_graph_input_name(g, i)
                      : wnn_graph_output_name(g, i - ni);
        if (wnn_tensor_create(c, d, !in, in, NULL, &t[i], &err) != WNN_OK) {
            check_failed(&err, NULL);
            ok = false;
            break;
        }
        if (in) {
            size_t bytes = (size_t)wnn_desc_bytes(d);
            unsigned char *buf = malloc(bytes + 1);
            if (!buf) {
                ok = false;
                break;
            }
            fill_bytes(r, buf, bytes);
            if (wnn_context_write(c, t[i], buf, bytes, &err) != WNN_OK) {
                check_failed(&err, NULL);
            }
            free(buf);
        }
    }
    if (ok) {
        uint8_t mode = u8(r);
        wnn_tensor *saved = NULL;
        uint32_t k = 0;
        if (mode < 8 && ni + no > 0) {
            /* a destroyed tensor: the dispatch must be a TypeError */
            wnn_tensor_destroy(t[pick(r, ni + no)]);
        } else if (mode < 12) {
            wnn_graph_destroy(g); /* InvalidStateError */
        } else if (mode < 16 && ni + no > 1) {
            /* one tensor twice (an input as an output...): a TypeError */
            k = 1 + pick(r, ni + no - 1);
            saved = t[k];
            t[k] = t[0];
        } else if (mode < 20 && ni > 0 && no > 0) {
            /* names swapped between inputs and outputs: TypeErrors */
            const char *tmp = names[0];
            names[0] = names[ni];
            names[ni] = tmp;
        }
        wnn_status st = wnn_context_dispatch(c, g, ni, names, t, no,
                                             names + ni, t + ni, &err);
        if (saved) {
            if (st == WNN_OK) {
                die("a dispatch with one tensor twice was accepted", NULL);
            }
            t[k] = saved;
        }
        if (st != WNN_OK) {
            check_failed(&err, NULL);
        } else {
            stat_dispatched++;
        }
        bool all_read = st == WNN_OK;
        for (uint32_t i = 0; i < no; i++) {
            wnn_tensor *o = t[ni + i];
            size_t bytes = (size_t)wnn_desc_bytes(wnn_tensor_desc(o));
            unsigned char *buf = malloc(bytes + 1);
            if (!buf) {
                break;
            }
            if (wnn_context_read(c, o, buf, bytes, &err) != WNN_OK) {
                check_failed(&err, NULL);
                all_read = false;
            }
            free(buf);
        }
        stat_ran_ok += all_read;
        if (mode >= 20 && mode < 40) {
            /* run it again on the same tensors (the plan is reused) */
            if (wnn_context_dispatch(c, g, ni, names, t, no, names + ni,
                                     t + ni, &err) != WNN_OK) {
                check_failed(&err, NULL);
            }
        }
    }
    for (uint32_t i = 0; i < ni + no; i++) {
        if (t[i]) {
            wnn_tensor_destroy(t[i]);
            wnn_tensor_release(t[i]);
        }
    }
}

static void
build_and_run(prog *p, rd *r)
{
    wnn_error err;
    uint32_t ids[8];
    const char *names[8];
    static const char *const out_names[8] = { "o0", "o1", "o2", "o3",
                                              "o4", "o5", "o6", "o7" };
    uint32_t n = 1 + pick(r, 3);
    for (uint32_t i = 0; i < n; i++) {
        names[i] = out_names[i];
        if (p->n_nodes && !chance(r, 8)) {
            ids[i] = p->nodes[pick(r, p->n_nodes)];
        } else {
            ids[i] = some_operand(p, r); /* maybe an input: a TypeError */
        }
    }
    if (chance(r, 8)) {
        names[n - 1] = names[0]; /* a duplicate name */
    }
    if (chance(r, 4)) {
        n = 0; /* no outputs */
    }
    if (p->total_bytes > 16 * EXEC_BYTES) {
        return; /* valid but too large to compile here */
    }
    wnn_graph *g = NULL;
    if (wnn_builder_build(p->b, n, names, ids, &g, &err) != WNN_OK) {
        check_failed(&err, NULL);
        return;
    }
    stat_built++;
    /* the builder has built: everything now is an InvalidStateError */
    uint32_t id, nout;
    wnn_desc d = { .dtype = WNN_FLOAT32, .rank = 0 };
    if (wnn_builder_input(p->b, "late", &d, &id, &err) == WNN_OK ||
        err.kind != WNN_INVALID_STATE) {
        die("input() after build() is not an InvalidStateError", &err);
    }
    if (wnn_builder_op(p->b, WNN_OP_RELU, &ids[0], 1, &id, NULL, &id, 1, &nout,
                       &err) == WNN_OK ||
        err.kind != WNN_INVALID_STATE) {
        die("an operator after build() is not an InvalidStateError", &err);
    }
    if (p->total_bytes <= EXEC_BYTES) {
        run_graph(p, r, g);
    }
    wnn_graph_release(g);
}

static wnn_context *shared_ctx;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    wnn_error err;
    if (wnn_context_create(WNN_DEVICE_CPU, &shared_ctx, &err) != WNN_OK) {
        die("cannot create a CPU context", &err);
    }
    if (getenv("WNN_FUZZ_STATS")) {
        atexit(print_stats);
    }
    return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rd r = { data, size };
    prog p;
    memset(&p, 0, sizeof(p));
    wnn_error err;
    uint8_t flags = u8(&r);
    bool own_ctx = (flags & 0xf0) == 0xf0; /* a context of its own, lost later */
    if (own_ctx) {
        if (wnn_context_create(WNN_DEVICE_CPU, &p.ctx, &err) != WNN_OK) {
            die("cannot create a CPU context", &err);
        }
    } else {
        p.ctx = shared_ctx;
    }
    if (wnn_builder_create(p.ctx, &p.b, &err) != WNN_OK) {
        die("cannot create a builder", &err);
    }
    uint32_t n_in = 1 + pick(&r, 4);
    for (uint32_t i = 0; i < n_in; i++) {
        make_input(&p, &r, chance(&r, 8));
    }
    uint32_t n_const = pick(&r, 4);
    for (uint32_t i = 0; i < n_const; i++) {
        make_constant(&p, &r);
    }
    uint32_t n_ops = 1 + pick(&r, 10);
    for (uint32_t i = 0; i < n_ops && r.n; i++) {
        make_op(&p, &r);
        if (chance(&r, 16)) {
            make_input(&p, &r, false);
        }
    }
    if (own_ctx && (flags & 1)) {
        /* lost before build: build and everything after fail cleanly */
        wnn_context_destroy(p.ctx, "fuzz");
    }
    build_and_run(&p, &r);
    if (own_ctx) {
        wnn_context_destroy(p.ctx, "fuzz");
    }
    wnn_builder_free(p.b);
    if (own_ctx) {
        wnn_context_release(p.ctx);
    }
    return 0;
}

#ifdef WNN_FUZZ_STANDALONE
/* ---- replayer: main() over files and directories -------------------------- */
static int
replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        return 0;
    }
    unsigned char *buf = NULL;
    size_t n = 0, cap = 0, got;
    do {
        if (n == cap) {
            cap = cap ? cap * 2 : 4096;
            unsigned char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                return 0;
            }
            buf = nb;
        }
        got = fread(buf + n, 1, cap - n, f);
        n += got;
    } while (got > 0);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 1;
}

static int
cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int
main(int argc, char **argv)
{
    int n = 0;
    LLVMFuzzerInitialize(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        DIR *d = opendir(argv[i]);
        if (!d) {
            n += replay_file(argv[i]);
            continue;
        }
        char **names = NULL;
        size_t k = 0, cap = 0;
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.') {
                continue;
            }
            if (k == cap) {
                cap = cap ? cap * 2 : 64;
                char **nn = realloc(names, cap * sizeof(char *));
                if (!nn) {
                    break;
                }
                names = nn;
            }
            size_t len = strlen(argv[i]) + strlen(e->d_name) + 2;
            names[k] = malloc(len);
            if (!names[k]) {
                break;
            }
            snprintf(names[k], len, "%s/%s", argv[i], e->d_name);
            k++;
        }
        closedir(d);
        if (k > 1) {
            qsort(names, k, sizeof(char *), cmp_names);
        }
        for (size_t j = 0; j < k; j++) {
            n += replay_file(names[j]);
            free(names[j]);
        }
        free(names);
    }
    wnn_context_release(shared_ctx);
    printf("fuzz_replay: %d inputs replayed, no crash\n", n);
    return 0;
}
#endif
