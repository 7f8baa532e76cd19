// __aeabi_fdiv for armv6m (Cortex-M0/M0+) native modules: IEEE 754 binary32 division,
// round to nearest even, subnormals and specials included, in plain C with 32-bit integers.
//
// Why: a .mpy is relocated by MicroPython's mpy_ld, which refuses absolute relocations on ARM.
// Debian's Thumb-1 libgcc builds its soft-float division (divsf3.o) with a literal holding an
// absolute address, so linking it fails ("Absolute relocations not supported on ARM"). This
// file is compiled with the module's own position-independent flags and defines the symbol
// first, so the linker never pulls divsf3.o. The other soft-float helpers link as they are.
// tests/embedded/test_softfloat.py checks it bit for bit against the host's division.
#include <stdint.h>

typedef union {
    float f;
    uint32_t u;
} fdiv_bits_t;

static float fdiv_make(uint32_t u) {
    fdiv_bits_t r;
    r.u = u;
    return r.f;
}

float __aeabi_fdiv(float a, float b) {
    fdiv_bits_t x, y;
    x.f = a;
    y.f = b;
    uint32_t sign = (x.u ^ y.u) & 0x80000000u;
    int ea = (int)((x.u >> 23) & 0xff), eb = (int)((y.u >> 23) & 0xff);
    uint32_t ma = x.u & 0x7fffffu, mb = y.u & 0x7fffffu;
    if (ea == 0xff) {  // a is NaN or infinite
        if (ma || eb == 0xff) {
            return fdiv_make(ma ? (x.u | 0x400000u) : 0x7fc00000u);
        }
        return fdiv_make(sign | 0x7f800000u);
    }
    if (eb == 0xff) {  // b is NaN or infinite (a finite)
        return mb ? fdiv_make(y.u | 0x400000u) : fdiv_make(sign);
    }
    if (ea == 0) {
        if (!ma) {  // 0 / x: 0, or NaN for 0 / 0
            return (eb == 0 && !mb) ? fdiv_make(0x7fc00000u) : fdiv_make(sign);
        }
        while (!(ma & 0x800000u)) {  // normalise a subnormal dividend
            ma <<= 1;
            ea--;
        }
        ea++;
    } else {
        ma |= 0x800000u;
    }
    if (eb == 0) {
        if (!mb) {  // x / 0
            return fdiv_make(sign | 0x7f800000u);
        }
        while (!(mb & 0x800000u)) {
            mb <<= 1;
            eb--;
        }
        eb++;
    } else {
        mb |= 0x800000u;
    }
    int e = ea - eb + 127;
    if (ma < mb) {  // make the quotient's leading bit 1: ma / mb in [1, 2)
        ma <<= 1;
        e--;
    }
    // long division: 24 quotient bits and a guard bit; the remainder gives the sticky bit
    uint32_t q = 0, rem = ma;
    for (int i = 0; i < 25; i++) {
        q <<= 1;
        if (rem >= mb) {
            rem -= mb;
            q |= 1;
        }
        rem <<= 1;
    }
    uint32_t sticky = rem != 0;
    if (e <= 0) {  // subnormal result: shift out 1 - e more bits, keeping them sticky
        int sh = 1 - e;
        if (sh > 25) {
            return fdiv_make(sign);
        }
        sticky |= (q & ((1u << sh) - 1)) != 0;
        q >>= sh;
        e = 0;
    }
    uint32_t guard = q & 1;
    q >>= 1;
    if (guard && (sticky || (q & 1))) {
        q++;  // may carry into the exponent (also from the largest subnormal to the smallest
              // normal), which the encoding below absorbs
    }
    if (e == 0) {
        return fdiv_make(sign | q);
    }
    uint32_t u = ((uint32_t)(e - 1) << 23) + q;
    if (u >= 0x7f800000u) {
        return fdiv_make(sign | 0x7f800000u);
    }
    return fdiv_make(sign | u);
}
