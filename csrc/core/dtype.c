/* dtype.c -- data types, descriptors, float16 conversion and the spec's
 * "cast" of an MLNumber (#algorithms-casting). */
#include <math.h>
#include <string.h>

#include "internal.h"
#include "../include/wnn_numerics.h"

static const char *const dtype_names[WNN_DTYPE_COUNT] = {
    "float32", "float16", "int32", "uint32", "int64", "uint64", "int8", "uint8",
};
static const size_t dtype_sizes[WNN_DTYPE_COUNT] = { 4, 2, 4, 4, 8, 8, 1, 1 };

const char *
wnn_dtype_name(wnn_dtype t)
{
    return (unsigned)t < WNN_DTYPE_COUNT ? dtype_names[t] : "?";
}

int
wnn_dtype_from_name(const char *name, wnn_dtype *out)
{
    for (int i = 0; i < WNN_DTYPE_COUNT; i++) {
        if (strcmp(name, dtype_names[i]) == 0) {
            *out = (wnn_dtype)i;
            return 0;
        }
    }
    return -1;
}

size_t
wnn_dtype_size(wnn_dtype t)
{
    return (unsigned)t < WNN_DTYPE_COUNT ? dtype_sizes[t] : 0;
}

/* Descriptors that reach here passed "check dimensions": each dimension and
 * the element count are valid dimensions (< 2^31), so these cannot overflow. */
uint64_t
wnn_desc_elements(const wnn_desc *d)
{
    uint64_t n = 1;
    for (uint32_t i = 0; i < d->rank; i++) {
        n *= d->shape[i];
    }
    return n;
}

uint64_t
wnn_desc_bytes(const wnn_desc *d)
{
    return wnn_desc_elements(d) * wnn_dtype_size(d->dtype);
}

bool
wnn_desc_same_shape(const wnn_desc *a, const wnn_desc *b)
{
    return a->rank == b->rank &&
           memcmp(a->shape, b->shape, a->rank * sizeof(uint32_t)) == 0;
}

bool
wnn_desc_equal(const wnn_desc *a, const wnn_desc *b)
{
    return a->dtype == b->dtype && wnn_desc_same_shape(a, b);
}

/* IEEE binary16 <-> binary32, round to nearest even (wnn_numerics.h: the
 * kernels' too). */
float
wnn_f16_to_f32(uint16_t h)
{
    return wnn_half_to_float(h);
}

uint16_t
wnn_f32_to_f16(float f)
{
    return wnn_float_to_half(f);
}


/* ConvertToInt(x, bits, signedness) for a double: clamp, then round half to
 * even; NaN -> 0. */
static double
convert_to_int(double x, double lo, double hi)
{
    if (isnan(x)) {
        return 0;
    }
    if (x < lo) {
        x = lo;
    }
    if (x > hi) {
        x = hi;
    }
    x = nearbyint(x); /* default rounding mode: half to even */
    return x == 0 ? 0 : x;
}

void
wnn_number_store(const wnn_number *v, wnn_dtype t, void *dst)
{
    /* Exact 64-bit integers keep their precision for int64 / uint64. */
    if (v->is_int && (t == WNN_INT64 || t == WNN_UINT64)) {
        if (t == WNN_INT64) {
            int64_t r;
            if (v->is_neg) {
                r = v->mag > (uint64_t)INT64_MAX + 1 ? INT64_MIN
                                                    : (int64_t)(0 - v->mag);
            } else {
                r = v->mag > (uint64_t)INT64_MAX ? INT64_MAX
                                                 : (int64_t)v->mag;
            }
            memcpy(dst, &r, 8);
        } else {
            uint64_t r = v->is_neg ? 0 : v->mag;
            memcpy(dst, &r, 8);
        }
        return;
    }
    double x = v->d;
    switch (t) {
    case WNN_FLOAT32: {
        /* one IEEE rounding from the exact value (ConvertToFloat) */
        float f = v->is_int ? (v->is_neg ? -(float)v->mag : (float)v->mag)
                            : (float)x;
        memcpy(dst, &f, 4);
        break;
    }
    case WNN_FLOAT16: {
        uint16_t h = wnn_f64_to_f16(x); /* one rounding (wnn_numerics.h) */
        memcpy(dst, &h, 2);
        break;
    }
    case WNN_INT32: {
        int32_t r = (int32_t)convert_to_int(x, -2147483648.0, 2147483647.0);
        memcpy(dst, &r, 4);
        break;
    }
    case WNN_UINT32: {
        /* The spec's table says ConvertToInt(x, 32, "signed") for uint32;
         * that is an evident typo: unsigned range is used. */
        uint32_t r = (uint32_t)convert_to_int(x, 0, 4294967295.0);
        memcpy(dst, &r, 4);
        break;
    }
    case WNN_INT64: {
        double c = convert_to_int(x, -9223372036854775808.0,
                                  9223372036854775807.0);
        int64_t r = c >= 9223372036854775807.0 ? INT64_MAX : (int64_t)c;
        memcpy(dst, &r, 8);
        break;
    }
    case WNN_UINT64: {
        double c = convert_to_int(x, 0, 18446744073709551615.0);
        uint64_t r = c >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)c;
        memcpy(dst, &r, 8);
        break;
    }
    case WNN_INT8: {
        int8_t r = (int8_t)convert_to_int(x, -128, 127);
        memcpy(dst, &r, 1);
        break;
    }
    case WNN_UINT8: {
        uint8_t r = (uint8_t)convert_to_int(x, 0, 255);
        memcpy(dst, &r, 1);
        break;
    }
    default:
        break;
    }
}
