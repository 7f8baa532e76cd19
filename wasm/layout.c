/* Strided views made contiguous: the one copy kernel behind permute, expand, slice and flip
 * (which are views until a kernel needs contiguous data). */
#include <string.h>
#include "ember.h"

#define COPY_ROWS(T)                                                                       \
    do {                                                                                   \
        const T *a = (const T *)src; T *out = (T *)dst;                                    \
        EM_FOR_ROWS(w,                                                                     \
            if (t0 == 1) memcpy(out + o, a + i0, (size_t)n * sizeof(T));                   \
            else for (int32_t k = 0; k < n; k++) out[o + k] = a[i0 + (int64_t)k * t0];);   \
    } while (0)

/* dst (contiguous) = the view of src with `ndim` dims: meta holds shape[ndim] then the
 * element strides[ndim]; src already points at the view's first element. size: bytes per
 * element (1, 2, 4 or 8). */
int32_t EXPORT(em_copy_strided)(uint8_t *dst, const uint8_t *src, int32_t size, int32_t ndim) {
    const int32_t *m = em_meta_words();
    em_walk w = {ndim, m, m + ndim, NULL, NULL};
    switch (size) {
    case 1: COPY_ROWS(uint8_t); return 0;
    case 2: COPY_ROWS(uint16_t); return 0;
    case 4: COPY_ROWS(uint32_t); return 0;
    case 8: COPY_ROWS(uint64_t); return 0;
    default: return 1;
    }
}

/* the inverse: the view of dst (meta: shape, strides) = contiguous src (jit's in-place
 * updates of strided state) */
int32_t EXPORT(em_scatter_strided)(uint8_t *dst, const uint8_t *src, int32_t size,
                                   int32_t ndim) {
    const int32_t *m = em_meta_words();
    em_walk w = {ndim, m, m + ndim, NULL, NULL};
    EM_FOR_ROWS(w,
        for (int32_t k = 0; k < n; k++)
            memcpy(dst + (i0 + (int64_t)k * t0) * size, src + (o + k) * size, (size_t)size););
    return 0;
}

void EXPORT(em_memcpy)(uint8_t *dst, const uint8_t *src, int32_t n) { memmove(dst, src, (size_t)n); }

/* 0, 1, ..., n-1 in dtype */
int32_t EXPORT(em_arange)(int32_t dtype, void *out, int32_t n) {
    if (dtype == DT_BOOL) {
        for (int32_t k = 0; k < n; k++) ((uint8_t *)out)[k] = k != 0;
        return 0;
    }
    switch (dtype) {
#define ARANGE(code, T) \
    case code: for (int32_t k = 0; k < n; k++) ((T *)out)[k] = (T)k; return 0;
    EM_DTYPES(ARANGE)
#undef ARANGE
    default: return 1;
    }
}
