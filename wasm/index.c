/* Indexing kernels: strided view-to-view copies (cat, slice_assign, in-place updates), gather,
 * scatter (replace or add), index_select, and the range of an integer tensor (Python's index
 * and exponent checks read two numbers back instead of the tensor). Index tensors are int64,
 * already checked to be in range. */
#include <stdint.h>
#include <string.h>
#include "ember.h"

#define IX_COPY(T)                                                                         \
    EM_FOR_ROWS(w,                                                                         \
        T *d = (T *)dst + i0; const T *s = (const T *)src + i1;                            \
        if (t0 == 1 && t1 == 1) memcpy(d, s, (size_t)n * sizeof(T));                       \
        else for (int32_t k = 0; k < n; k++) d[(int64_t)k * t0] = s[(int64_t)k * t1];)

/* the view dst = the view src, both of `ndim` dims; meta: shape, dst's element strides, src's
 * element strides; dst/src point at the views' first elements. size: bytes per element. */
int32_t EXPORT(em_copy_view)(uint8_t *dst, const uint8_t *src, int32_t size, int32_t ndim) {
    const int32_t *m = em_meta_words();
    em_walk w = {ndim, m, m + ndim, m + 2 * ndim, NULL};
    switch (size) {
    case 1: IX_COPY(uint8_t); return 0;
    case 2: IX_COPY(uint16_t); return 0;
    case 4: IX_COPY(uint32_t); return 0;
    case 8: IX_COPY(uint64_t); return 0;
    default: return 1;
    }
}

/* contiguous out (index's shape) = x[..., index[...], ...] along one dim; meta: index's shape,
 * x's strides over it (0 along dim), index's strides. step: x's stride along dim. */
#define IX_GATHER(T)                                                                       \
    EM_FOR_ROWS(w,                                                                         \
        for (int32_t k = 0; k < n; k++)                                                    \
            ((T *)out)[o + k] = ((const T *)x)[i0 + (int64_t)k * t0 +                      \
                                               index[i1 + (int64_t)k * t1] * step];)

int32_t EXPORT(em_gather)(int32_t size, const uint8_t *x, const int64_t *index, uint8_t *out,
                          int32_t ndim, int32_t step) {
    const int32_t *m = em_meta_words();
    em_walk w = {ndim, m, m + ndim, m + 2 * ndim, NULL};
    switch (size) {
    case 1: IX_GATHER(uint8_t); return 0;
    case 2: IX_GATHER(uint16_t); return 0;
    case 4: IX_GATHER(uint32_t); return 0;
    case 8: IX_GATHER(uint64_t); return 0;
    default: return 1;
    }
}

/* out[..., index[...], ...] = src[...] (add: +=, in index order) over index's shape, in
 * place in the contiguous out; meta: index's shape, out's strides over it (0 along dim),
 * index's strides, src's strides. step: out's stride along dim. */
#define IX_SCATTER(T, EXPR)                                                                \
    EM_FOR_ROWS(w,                                                                         \
        for (int32_t k = 0; k < n; k++) {                                                  \
            T *d = (T *)out + i0 + (int64_t)k * t0 + index[i1 + (int64_t)k * t1] * step;   \
            T s = ((const T *)src)[i2 + (int64_t)k * t2];                                  \
            *d = (T)(EXPR);                                                                \
        })

int32_t EXPORT(em_scatter)(int32_t add, int32_t dtype, uint8_t *out, const int64_t *index,
                           const uint8_t *src, int32_t ndim, int32_t step) {
    const int32_t *m = em_meta_words();
    em_walk w = {ndim, m, m + ndim, m + 2 * ndim, m + 3 * ndim};
    if (!add) {
        switch (dtype) {
        case DT_BOOL: case DT_U8: case DT_I8: IX_SCATTER(uint8_t, s); return 0;
        case DT_I32: case DT_F32: IX_SCATTER(uint32_t, s); return 0;
        case DT_I64: case DT_F64: IX_SCATTER(uint64_t, s); return 0;
        default: return 1;
        }
    }
    switch (dtype) {  /* integers wrap around (unsigned arithmetic); bools or */
    case DT_BOOL: IX_SCATTER(uint8_t, *d | s); return 0;
    case DT_U8: case DT_I8: IX_SCATTER(uint8_t, *d + s); return 0;
    case DT_I32: IX_SCATTER(uint32_t, *d + s); return 0;
    case DT_I64: IX_SCATTER(uint64_t, *d + s); return 0;
    case DT_F32: IX_SCATTER(float, *d + s); return 0;
    case DT_F64: IX_SCATTER(double, *d + s); return 0;
    default: return 1;
    }
}

/* out (outer, k, inner) = x (outer, dsize, inner) at the k positions `index` along the middle
 * dim; all contiguous, size: bytes per element */
int32_t EXPORT(em_index_select)(int32_t size, const uint8_t *x, const int64_t *index,
                                uint8_t *out, int32_t outer, int32_t dsize, int32_t inner,
                                int32_t k) {
    size_t row = (size_t)inner * (size_t)size;
    for (int64_t o = 0; o < outer; o++)
        for (int32_t j = 0; j < k; j++)
            memcpy(out + (o * k + j) * row, x + (o * dsize + index[j]) * row, row);
    return 0;
}

/* lo, hi (two int64 at `result`) = the min and max of the integer view x (meta: shape, element
 * strides); lo > hi when x is empty */
#define IX_RANGE(T)                                                                        \
    EM_FOR_ROWS(w,                                                                         \
        const T *p = (const T *)x + i0;                                                    \
        for (int32_t k = 0; k < n; k++) {                                                  \
            int64_t v = p[(int64_t)k * t0];                                                \
            lo = v < lo ? v : lo; hi = v > hi ? v : hi;                                    \
        })

int32_t EXPORT(em_int_range)(int32_t dtype, const void *x, int32_t ndim, int64_t *result) {
    const int32_t *m = em_meta_words();
    em_walk w = {ndim, m, m + ndim, NULL, NULL};
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    switch (dtype) {
    case DT_BOOL: case DT_U8: IX_RANGE(uint8_t); break;
    case DT_I8: IX_RANGE(int8_t); break;
    case DT_I32: IX_RANGE(int32_t); break;
    case DT_I64: IX_RANGE(int64_t); break;
    default: return 1;
    }
    result[0] = lo;
    result[1] = hi;
    return 0;
}
