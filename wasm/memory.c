/* Memory for tensors: malloc/free from wasi-libc (dlmalloc over memory.grow), and the
 * metadata scratch. */
#include <stdlib.h>
#include <string.h>
#include "ember.h"

static int32_t scratch[4096];
static int32_t *current = scratch;

/* the words the next kernel reads: the scratch, or a replayed program's staged copy */
int32_t *em_meta_words(void) { return current; }

/* where Python writes shapes and strides before a call */
int32_t *EXPORT(em_meta)(void) { return scratch; }

/* kernels read their metadata at `words` from now on (0: the scratch again); ember.jit's
 * replays stage every call's metadata once and switch to it with this one call */
void EXPORT(em_use_meta)(int32_t *words) { current = words ? words : scratch; }

/* a block of n bytes, 16-byte aligned (SIMD loads); 0 when memory is exhausted */
void *EXPORT(em_alloc)(int32_t n) {
    return aligned_alloc(16, n > 0 ? (size_t)((n + 15) & ~15) : 16);
}

void EXPORT(em_free)(void *p) { free(p); }

/* fill n elements of `size` bytes at dst with the pattern at src (a scalar; 0: the
 * metadata words) */
void EXPORT(em_fill)(uint8_t *dst, const uint8_t *src, int32_t size, int32_t n) {
    if (n <= 0) return;
    if (!src) src = (const uint8_t *)em_meta_words();
    memcpy(dst, src, (size_t)size);
    int64_t done = 1, total = (int64_t)n;
    while (done < total) {  /* doubling copies: log2(n) memcpys */
        int64_t chunk = done < total - done ? done : total - done;
        memcpy(dst + done * size, dst, (size_t)(chunk * size));
        done += chunk;
    }
}
