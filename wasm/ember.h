/* Ember's wasm kernels: shared declarations.
 *
 * ABI (read by core/ember/backends/wasm/): pointers and sizes are i32 offsets into the module's
 * linear memory; tensors are contiguous, row-major. Shapes and element strides too long for
 * parameters go through the metadata scratch (em_meta(), int32 words) that Python writes
 * before a call. Dtype codes follow DTYPE_CODES in core/ember/backends/wasm/tensor.py.
 * Kernels never fail on valid input: Python checks shapes and dtypes before it calls.
 */
#ifndef EMBER_H
#define EMBER_H

#include <stdint.h>
#include <stddef.h>

#define EXPORT(name) __attribute__((export_name(#name))) name

enum { DT_BOOL = 0, DT_U8 = 1, DT_I8 = 2, DT_I32 = 3, DT_I64 = 4, DT_F32 = 5, DT_F64 = 6 };

/* X(code, C type) for every dtype, for kernels generated per dtype */
#define EM_DTYPES(X) \
    X(DT_BOOL, uint8_t) X(DT_U8, uint8_t) X(DT_I8, int8_t) X(DT_I32, int32_t) \
    X(DT_I64, int64_t) X(DT_F32, float) X(DT_F64, double)

#define EM_FLOATS(X) X(DT_F32, float) X(DT_F64, double)
#define EM_INTS(X) X(DT_U8, uint8_t) X(DT_I8, int8_t) X(DT_I32, int32_t) X(DT_I64, int64_t)

#define EM_MAX_DIMS 16

/* the metadata scratch: int32 words Python fills before a call (shapes, strides) */
int32_t *em_meta_words(void);

/* An N-d walk over a contiguous output of `ndim` dims and `shape`, with up to three inputs
 * read at element strides s0/s1/s2 (NULL: unused; 0 on broadcast dims). Runs the statements
 * once per innermost row, with o (the output offset), i0/i1/i2 (the inputs' offsets), n (the
 * row length) and t0/t1/t2 (the inputs' innermost strides) in scope. */
typedef struct {
    int ndim;
    const int32_t *shape, *s0, *s1, *s2;
} em_walk;

#define EM_FOR_ROWS(w, ...)                                                                \
    do {                                                                                   \
        const int _nd = (w).ndim;                                                          \
        int32_t _idx[_nd > 1 ? _nd : 1]; /* any rank: the metadata scratch bounds it */   \
        for (int _d = 0; _d < _nd; _d++) _idx[_d] = 0;                                     \
        const int32_t n = _nd ? (w).shape[_nd - 1] : 1;                                    \
        const int32_t t0 = _nd && (w).s0 ? (w).s0[_nd - 1] : 0;                            \
        const int32_t t1 = _nd && (w).s1 ? (w).s1[_nd - 1] : 0;                            \
        const int32_t t2 = _nd && (w).s2 ? (w).s2[_nd - 1] : 0;                            \
        (void)t0; (void)t1; (void)t2;                                                      \
        int64_t _rows = n == 0 ? 0 : 1;                                                    \
        for (int _d = 0; _d < _nd - 1; _d++) _rows *= (w).shape[_d];                       \
        int64_t o = 0, i0 = 0, i1 = 0, i2 = 0;                                             \
        (void)i0; (void)i1; (void)i2;                                                      \
        for (int64_t _r = 0; _r < _rows; _r++, o += n) {                                   \
            { __VA_ARGS__ }                                                                \
            for (int _d = _nd - 2; _d >= 0; _d--) {                                        \
                int64_t _s = (w).shape[_d];                                                \
                if ((w).s0) i0 += (w).s0[_d];                                              \
                if ((w).s1) i1 += (w).s1[_d];                                              \
                if ((w).s2) i2 += (w).s2[_d];                                              \
                if (++_idx[_d] < _s) break;                                                \
                if ((w).s0) i0 -= (w).s0[_d] * _s;                                         \
                if ((w).s1) i1 -= (w).s1[_d] * _s;                                         \
                if ((w).s2) i2 -= (w).s2[_d] * _s;                                         \
                _idx[_d] = 0;                                                              \
            }                                                                              \
        }                                                                                  \
    } while (0)

#endif
