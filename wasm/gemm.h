/* The GEMM shared by matmul, conv and its gradients (wasm/matmul.c):
 * C[M,N] (row stride ldc) (+)= A[M,K] @ B[K,N], A and B read at element strides, so a
 * transposed or sliced view is packed straight from its memory. The float32 GEMM takes a
 * packer for B instead of strides when B is virtual (a convolution's im2col columns). */
#ifndef EMBER_GEMM_H
#define EMBER_GEMM_H

#include <stdint.h>

/* columns per packed sliver of B: the micro-kernel's width */
#define MM_NR 8
/* rows of B per packed panel: a packer is never asked for more */
#define MM_KC 256

/* Fill dst with B[k0:k0+kc, j0:j0+nc] as slivers of MM_NR columns, each laid out [kc][MM_NR]
 * (columns past nc padded with zeros). */
typedef void (*mm_pack_fn)(const void *ctx, float *dst, int32_t k0, int32_t kc, int32_t j0,
                           int32_t nc);

typedef struct {
    const void *p;
    int32_t rs, cs; /* element strides of rows and columns */
} mm_view;

/* accumulate: C += A @ B, else C = A @ B (+ bias[i] on row i when bias is not NULL: the sums
 * start from it, no pass of its own) */
void mm_gemm_f32(int32_t m, int32_t n, int32_t k, mm_view a, mm_view b, mm_pack_fn pack,
                 const void *ctx, float *c, int32_t ldc, int accumulate, const float *bias);
void mm_gemm_f64(int32_t m, int32_t n, int32_t k, mm_view a, mm_view b, double *c, int32_t ldc,
                 int accumulate, const double *bias);

#endif
