// Per-dtype snippets, picked by name (`//! name`) and filled in by the kernel layer.
// Storage: float32 → f32, int32/int64 → i32, float16 → 2 per u32 word, int8/uint8/bool → 4 per
// u32 word (byte j of a word is element j: the same bytes as TensorData, little-endian).
// Compute types: floats in f32, integers in i32 (narrowed by truncation on store: wraps like
// numpy), bool in bool.

//! load_f32
fn load_{{NAME}}(i: u32) -> f32 { return {{NAME}}[i]; }

//! load_i32
fn load_{{NAME}}(i: u32) -> i32 { return {{NAME}}[i]; }

//! load_f16
fn load_{{NAME}}(i: u32) -> f32 { return f16_bits_to_f32(({{NAME}}[i >> 1u] >> ((i & 1u) * 16u)) & 0xffffu); }

//! load_i8
fn load_{{NAME}}(i: u32) -> i32 { return extractBits(bitcast<i32>({{NAME}}[i >> 2u]), (i & 3u) * 8u, 8u); }

//! load_u8
fn load_{{NAME}}(i: u32) -> i32 { return i32(extractBits({{NAME}}[i >> 2u], (i & 3u) * 8u, 8u)); }

//! load_bool
fn load_{{NAME}}(i: u32) -> bool { return extractBits({{NAME}}[i >> 2u], (i & 3u) * 8u, 8u) != 0u; }

//! store_f32
fn store_out(v: array<f32, 1>) -> f32 { return v[0]; }

//! store_i32
fn store_out(v: array<i32, 1>) -> i32 { return v[0]; }

//! store_f16
fn store_out(v: array<f32, 2>) -> u32 { return f32_to_f16_bits(v[0]) | (f32_to_f16_bits(v[1]) << 16u); }

//! store_8
fn store_out(v: array<i32, 4>) -> u32 {
    return (u32(v[0]) & 255u) | ((u32(v[1]) & 255u) << 8u) | ((u32(v[2]) & 255u) << 16u)
        | ((u32(v[3]) & 255u) << 24u);
}

//! store_bool
fn store_out(v: array<bool, 4>) -> u32 {
    return select(0u, 1u, v[0]) | (select(0u, 1u, v[1]) << 8u) | (select(0u, 1u, v[2]) << 16u)
        | (select(0u, 1u, v[3]) << 24u);
}

//! f16
// Exact f16 <-> f32 conversion with round-half-to-even (pack2x16float's rounding and
// subnormal handling are left to the driver).
fn f16_bits_to_f32(h: u32) -> f32 {
    let s = (h & 0x8000u) << 16u;
    let e = (h >> 10u) & 0x1fu;
    let m = h & 0x3ffu;
    if (e == 0u) {
        let v = f32(m) * 5.9604644775390625e-8;
        return select(v, -v, s != 0u);
    }
    if (e == 31u) { return bitcast<f32>(s | 0x7f800000u | (m << 13u)); }
    return bitcast<f32>(s | ((e + 112u) << 23u) | (m << 13u));
}

fn f32_to_f16_bits(x: f32) -> u32 {
    let b = bitcast<u32>(x);
    let s = (b >> 16u) & 0x8000u;
    let a = b & 0x7fffffffu;
    if (a > 0x7f800000u) { return s | 0x7e00u; }
    if (a >= 0x477ff000u) { return s | 0x7c00u; }
    if (a < 0x38800000u) { return s | u32(round(bitcast<f32>(a) * 16777216.0)); }
    let e = a - 0x38000000u;
    return s | ((e + 0xfffu + ((e >> 13u) & 1u)) >> 13u);
}

//! nan_f32
fn is_nan_ct(x: f32) -> bool { return is_nan_f(x); }

//! nan_i32
fn is_nan_ct(x: i32) -> bool { return false; }
