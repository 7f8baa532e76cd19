/* Stable sort along one dim, with the permutation (int64 indices), as numpy's stable sort and
 * PyTorch's sort(stable=True): equal values keep their order (descending too), NaNs go last
 * ascending and first descending. The tensor is (outer, r, inner), sorted along r. */
#include <stdlib.h>
#include <string.h>
#include "ember.h"

/* STO_BEFORE(a, b): value a sorts strictly before value b (a strict weak order: NaNs are equal
 * to each other and after (ascending) or before (descending) every number) */
#define STO_ISNAN(v) ((v) != (v))
#define STO_BEFORE(desc, a, b)                                                             \
    ((desc) ? ((a) > (b) || (STO_ISNAN(a) && !STO_ISNAN(b)))                               \
            : ((a) < (b) || (!STO_ISNAN(a) && STO_ISNAN(b))))

/* merge sort of the lane positions `idx` (n of them) by the values `v`, `tmp` as scratch:
 * insertion sort for short runs, then bottom-up merges; both keep equal values in order */
#define STO_SORT(T)                                                                        \
    static void sto_sort_##T(int desc, const T *v, int32_t *idx, int32_t *tmp, int32_t n) { \
        enum { RUN = 16 };                                                                 \
        for (int32_t s = 0; s < n; s += RUN) {                                             \
            int32_t e = s + RUN < n ? s + RUN : n;                                         \
            for (int32_t i = s + 1; i < e; i++) {                                          \
                int32_t p = idx[i], j = i;                                                 \
                for (; j > s && STO_BEFORE(desc, v[p], v[idx[j - 1]]); j--) idx[j] = idx[j - 1]; \
                idx[j] = p;                                                                \
            }                                                                              \
        }                                                                                  \
        int32_t *src = idx, *dst = tmp;                                                    \
        for (int32_t width = RUN; width < n; width *= 2) {                                 \
            for (int32_t s = 0; s < n; s += 2 * width) {                                   \
                int32_t mid = s + width < n ? s + width : n;                               \
                int32_t e = s + 2 * width < n ? s + 2 * width : n;                         \
                int32_t i = s, j = mid, k = s;                                             \
                while (i < mid && j < e)                                                   \
                    dst[k++] = STO_BEFORE(desc, v[src[j]], v[src[i]]) ? src[j++] : src[i++]; \
                while (i < mid) dst[k++] = src[i++];                                       \
                while (j < e) dst[k++] = src[j++];                                         \
            }                                                                              \
            int32_t *t = src; src = dst; dst = t;                                          \
        }                                                                                  \
        if (src != idx) memcpy(idx, src, (size_t)n * sizeof(int32_t));                    \
    }                                                                                      \
    static int sto_lanes_##T(int desc, const T *x, T *out, int64_t *pos, int32_t outer,    \
                             int32_t r, int32_t inner) {                                   \
        T *lane = malloc((size_t)r * sizeof(T) + 1);                                       \
        int32_t *idx = malloc((size_t)r * 2 * sizeof(int32_t) + 1);                        \
        if (!lane || !idx) { free(lane); free(idx); return 2; }                            \
        for (int64_t o = 0; o < outer; o++)                                                \
            for (int32_t i = 0; i < inner; i++) {                                          \
                int64_t base = o * r * inner + i;                                          \
                for (int32_t j = 0; j < r; j++) {                                          \
                    lane[j] = x[base + (int64_t)j * inner];                                \
                    idx[j] = j;                                                            \
                }                                                                          \
                sto_sort_##T(desc, lane, idx, idx + r, r);                                 \
                for (int32_t j = 0; j < r; j++) {                                          \
                    out[base + (int64_t)j * inner] = lane[idx[j]];                         \
                    pos[base + (int64_t)j * inner] = idx[j];                               \
                }                                                                          \
            }                                                                              \
        free(lane);                                                                        \
        free(idx);                                                                         \
        return 0;                                                                          \
    }
STO_SORT(uint8_t)
STO_SORT(int8_t)
STO_SORT(int32_t)
STO_SORT(int64_t)
STO_SORT(float)
STO_SORT(double)

/* out, pos (outer, r, inner) = x sorted along r and the source positions; status 2 when the
 * scratch (r values and 2r positions) can't be allocated */
int32_t EXPORT(em_sort)(int32_t descending, int32_t dtype, const void *x, void *out,
                        int64_t *pos, int32_t outer, int32_t r, int32_t inner) {
    switch (dtype) {
    case DT_BOOL: case DT_U8: return sto_lanes_uint8_t(descending, x, out, pos, outer, r, inner);
    case DT_I8: return sto_lanes_int8_t(descending, x, out, pos, outer, r, inner);
    case DT_I32: return sto_lanes_int32_t(descending, x, out, pos, outer, r, inner);
    case DT_I64: return sto_lanes_int64_t(descending, x, out, pos, outer, r, inner);
    case DT_F32: return sto_lanes_float(descending, x, out, pos, outer, r, inner);
    case DT_F64: return sto_lanes_double(descending, x, out, pos, outer, r, inner);
    default: return 1;
    }
}
