/* vloops.h -- the element-wise loops written per ISA level with intrinsics
 * (vloops.c): the vector-math twins of vmath.h at AVX-512 and AVX2 + FMA,
 * their streaming-store forms, and the streamed copies and add / sub / mul
 * / div of large float32 outputs.  elementwise.c calls them where its
 * portable loops would run otherwise; each returns whether (or how much)
 * it did the work, so that the portable loop is the fallback on every
 * other CPU and under WEBNN_CPU_ISA=baseline. */
#ifndef WNN_CPU_VLOOPS_H
#define WNN_CPU_VLOOPS_H

#include <stdbool.h>
#include <stddef.h>

/* the functions with twins: y = f(x) (VL_SILU: x * sigmoid(x), rounded as
 * the sigmoid and the mul apart; VL_RELU: the streamed form only) */
typedef enum vl_fn {
    VL_EXP, VL_SIGMOID, VL_GELU, VL_TANH, VL_ERF, VL_SILU, VL_RELU
} vl_fn;

/* y[0, n) = f(x[0, n)) at the CPU's level (x == y allowed); false: no
 * twin at this level (the caller runs vmath.h's loop) */
bool vl_map(vl_fn f, size_t n, const float *x, float *y);

/* rows r < rows of a tile in place: y[r ys + i] = f(y[r ys + i] + b[i])
 * for i < n (b NULL: f(y[r ys + i]), no add), the add rounded to float32
 * before f as a separate add would; f not VL_RELU.  false: no twin at this
 * level (the caller runs its own loops) */
bool vl_map_rows(vl_fn f, size_t rows, size_t n, float *y, size_t ys,
                 const float *b);

/* the same with streaming stores, y 4-byte aligned (the caller fences);
 * false: not streamed at this level or for this function */
bool vl_map_nt(vl_fn f, size_t n, const float *x, float *y);

/* dst[0, n) = src[0, n) with streaming stores (the caller fences) */
void vl_copy_nt(float *dst, const float *src, size_t n);

/* the byte alignment of y that vl_binary_nt wants (its vector), or 0:
 * no streamed binary loop at this level */
size_t vl_nt_align(void);

/* y = a op b (op 0 add, 1 sub, 2 mul, 3 div) on whole vectors from the
 * start, streamed, y aligned to vl_nt_align(); returns the elements done
 * (the caller does the rest) */
size_t vl_binary_nt(int op, size_t n, const float *a, const float *b, float *y);

/* y[0, n) = GPT-2's tanh gelu of x[0, n) (x == y allowed), k = { a, b, c,
 * d }: (x a) ((tanh((x + x^3 b) c)) + d), each operation rounded as the
 * graph's nodes round it (pow(x, 3) as pow_int_f32, tanh as the level's
 * twin; order bit 0: the add is (x^3 b) + x, bit 1: the last product
 * (tanh(.) + d) (x a)): an epilogue program of that form
 * (cpu/epilogue.c).  false: no twins at this level (or
 * WEBNN_CPU_VM_TWINS=0) */
bool vl_gelu_tanh(const float k[4], int order, size_t n, const float *x,
                  float *y);

/* pow of float32 (vloops.c says how): the elements done from the start,
 * 0 where this level has no such loop; the caller does the rest */
size_t vl_pow(size_t n, const float *a, const float *b, float *y);

#endif
