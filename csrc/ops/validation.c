/* validation.c -- helpers shared by the checkers: error filling, shape
 * broadcasting (spec "Broadcasting" algorithms) and common checks. */
#include <stdio.h>
#include <string.h>

#include "ops_internal.h"

wnn_status
wnn_vfailk(wnn_error *err, wnn_error_kind kind, const char *op,
           const char *label, const char *arg, const char *fmt, va_list ap)
{
    if (err == NULL) {
        return WNN_ERR;
    }
    memset(err, 0, sizeof(*err));
    err->kind = kind;
    snprintf(err->op, sizeof(err->op), "%s", op ? op : "");
    wnn_sanitize(label ? label : "", err->label, sizeof(err->label));
    snprintf(err->argument, sizeof(err->argument), "%s", arg ? arg : "");
    vsnprintf(err->message, sizeof(err->message), fmt, ap);
    return WNN_ERR;
}

wnn_status
wnn_failk(wnn_error *err, wnn_error_kind kind, const char *op,
          const char *label, const char *arg, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    wnn_vfailk(err, kind, op, label, arg, fmt, ap);
    va_end(ap);
    return WNN_ERR;
}

wnn_status
wnn_fail(wnn_check *c, const char *arg, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    wnn_vfailk(c->err, WNN_TYPE_ERROR, wnn_op_get(c->op)->camel, c->label,
               arg, fmt, ap);
    va_end(ap);
    return WNN_ERR;
}

void
wnn_sanitize(const char *s, char *buf, size_t n)
{
    size_t k = 0;
    const unsigned char *p = (const unsigned char *)s;
    while (*p && k + 1 < n) {
        /* C0/C1 controls, DEL, and U+200E/F, U+202A..E, U+2066..9 */
        if (*p < 0x20 || *p == 0x7f) {
            buf[k++] = '?';
            p++;
        } else if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] < 0xa0) {
            buf[k++] = '?';
            p += 2;
        } else if (p[0] == 0xe2 && p[1] == 0x80 && p[2] &&
                   ((p[2] >= 0xaa && p[2] <= 0xae) || p[2] == 0x8e ||
                    p[2] == 0x8f)) {
            buf[k++] = '?';
            p += 3;
        } else if (p[0] == 0xe2 && p[1] == 0x81 && p[2] >= 0xa6 &&
                   p[2] <= 0xa9) {
            buf[k++] = '?';
            p += 3;
        } else {
            buf[k++] = (char)*p++;
        }
    }
    buf[k] = '\0';
}

void
wnn_op_prefix(const char *op, const char *label, char *buf, size_t n)
{
    char clean[64];
    if (label && label[0]) {
        wnn_sanitize(label, clean, sizeof(clean));
        snprintf(buf, n, "%s (label '%s')", op, clean);
    } else {
        snprintf(buf, n, "%s", op);
    }
}

void
wnn_error_clear(wnn_error *e)
{
    /* the strings are read up to their NUL: no need to clear ~400 bytes on
     * every task run */
    e->kind = WNN_NO_ERROR;
    e->op[0] = e->label[0] = e->argument[0] = e->message[0] = '\0';
}

void
wnn_error_format(const wnn_error *e, char *buf, size_t n)
{
    size_t k = 0;
    buf[0] = '\0';
    if (e->op[0]) {
        k += snprintf(buf + k, n - k, "%s", e->op);
        if (e->label[0] && k < n) {
            k += snprintf(buf + k, n - k, " (label '%s')", e->label);
        }
        if (k < n) {
            k += snprintf(buf + k, n - k, ": ");
        }
    }
    if (e->argument[0] && k < n) {
        k += snprintf(buf + k, n - k, "argument '%s': ", e->argument);
    }
    if (k < n) {
        snprintf(buf + k, n - k, "%s", e->message);
    }
}

/* #algorithms-broadcasting: bidirectionally broadcasting shapes. */
int
wnn_broadcast_shapes(const uint32_t *a, uint32_t ra, const uint32_t *b,
                     uint32_t rb, uint32_t *out, uint32_t *rout)
{
    uint32_t r = ra > rb ? ra : rb;
    for (uint32_t i = 0; i < r; i++) {
        uint32_t da = i < r - ra ? 1 : a[i - (r - ra)];
        uint32_t db = i < r - rb ? 1 : b[i - (r - rb)];
        if (da != db && da != 1 && db != 1) {
            return -1;
        }
        out[i] = da == 1 ? db : da;
    }
    *rout = r;
    return 0;
}

/* #algorithms-broadcasting: unidirectionally broadcastable. */
bool
wnn_unidirectional(const uint32_t *from, uint32_t rf, const uint32_t *to,
                   uint32_t rt)
{
    if (rf > rt) {
        return false;
    }
    for (uint32_t i = 0; i < rt; i++) {
        uint32_t d = i < rt - rf ? 1 : from[i - (rt - rf)];
        if (d != to[i] && d != 1) {
            return false;
        }
    }
    return true;
}

const char *
wnn_shape_str(const uint32_t *s, uint32_t r, char *buf, size_t n)
{
    size_t k = snprintf(buf, n, "[");
    for (uint32_t i = 0; i < r && k < n; i++) {
        k += snprintf(buf + k, n - k, i ? ", %u" : "%u", s[i]);
    }
    if (k < n) {
        snprintf(buf + k, n - k, "]");
    }
    return buf;
}

wnn_status
wnn_check_same_dtype(wnn_check *c, uint32_t i, uint32_t j, const char *ni,
                     const char *nj)
{
    if (c->in[i].dtype != c->in[j].dtype) {
        return wnn_fail(c, nj, "data type %s does not match %s's data type %s",
                        wnn_dtype_name(c->in[j].dtype), ni,
                        wnn_dtype_name(c->in[i].dtype));
    }
    return WNN_OK;
}

uint32_t *
wnn_check_list(wnn_check *c, wnn_u32_list *l, uint32_t n)
{
    if (c->n_lists >= WNN_CHECK_LISTS || n > WNN_MAX_RANK) {
        return NULL; /* a checker bug: never more than WNN_CHECK_LISTS */
    }
    uint32_t *v = c->lists[c->n_lists++];
    l->v = v;
    l->n = n;
    l->present = true;
    l->scalar = false;
    return v;
}

/* MLOperandDescriptor "check dimensions", plus the implementation's byte
 * length limit (a context's maxTensorByteLength).  Every product is checked
 * before it can overflow. */
wnn_status
wnn_check_dimensions(const wnn_desc *d, uint64_t max_bytes, const char *op,
                     const char *arg, wnn_error *err)
{
    uint64_t count = 1;
    if ((unsigned)d->dtype >= WNN_DTYPE_COUNT) {
        return wnn_failk(err, WNN_TYPE_ERROR, op, NULL, arg,
                         "unknown data type");
    }
    if (d->rank > WNN_MAX_RANK) {
        return wnn_failk(err, WNN_TYPE_ERROR, op, NULL, arg,
                         "rank %u exceeds the supported maximum %u", d->rank,
                         WNN_MAX_RANK);
    }
    for (uint32_t i = 0; i < d->rank; i++) {
        if (d->shape[i] == 0 || d->shape[i] > WNN_MAX_DIM) {
            return wnn_failk(err, WNN_TYPE_ERROR, op, NULL, arg,
                             "dimension %u (%u) is not a valid dimension "
                             "(1 to 2147483647)", i, d->shape[i]);
        }
        count *= d->shape[i]; /* both factors < 2^31: no overflow */
        if (count > WNN_MAX_DIM) {
            return wnn_failk(err, WNN_TYPE_ERROR, op, NULL, arg,
                             "element count exceeds 2147483647");
        }
    }
    uint64_t bytes = count * wnn_dtype_size(d->dtype);
    if (bytes > max_bytes) {
        return wnn_failk(err, WNN_TYPE_ERROR, op, NULL, arg,
                         "byte length %llu exceeds maxTensorByteLength %llu",
                         (unsigned long long)bytes,
                         (unsigned long long)max_bytes);
    }
    return WNN_OK;
}
