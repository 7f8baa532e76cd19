// Quantization helpers: the int8 code of a float (shaders/quant.wgsl's kernels), and the
// operand reads and rescaling bindings that run the tuned float kernels — the matmul of
// shaders/matmul.wgsl, the depthwise conv of shaders/depthwise.wgsl, the implicit GEMM of
// shaders/conv_igemm.wgsl — on int8 codes held as f32 (products and sums of the codes are
// exact integers in f32 while K·127² < 2²⁴, K·255·127 for unsigned input codes; the matmul
// moves longer sums into int32 as it goes, the other kernels don't take them): inputs
// quantized as they load or int8/uint8 codes read
// from their packed words, and the requantizing stores of codes out (qlinear_q / qconv_q).
// Launched from core/ember/backends/wgpu/quant.py.

//! code
// The one rounding of every quantized kernel (ember/contract/rounding.py's round_code): v
// rounded half away from zero, clamped to [lo, hi] (integer-valued bounds), NaN to 0 (tested
// on the bits: drivers may fold v != v away). trunc(v) moves one away from zero where
// |v - trunc(v)| >= 0.5: the difference is exact, so no rounding mode changes a code
// (floor(|v| + 0.5) would take 0.49999997 to 1). Every kernel with "requant" has this section.
fn round_code(v: f32, lo: f32, hi: f32) -> i32 {
    if ((bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u) { return 0; }
    let c = clamp(v, lo, hi);
    let t = trunc(c);
    let f = c - t;
    return i32(t) + select(0, 1, f >= 0.5) - select(0, 1, f <= -0.5);
}

// the int8 code of x at scale s: -127..127
fn code(x: f32, s: f32) -> i32 { return round_code(x / s, -127.0, 127.0); }

// the unsigned code (qlinear_u8 / qconv_u8): 0..255
fn code_u8(x: f32, s: f32) -> i32 { return round_code(x / s, 0.0, 255.0); }

// byte j (sign-extended) of a packed word
fn byte_of(word: u32, j: u32) -> i32 {
    return extractBits(bitcast<i32>(word), j * 8u, 8u);
}

//! read_codes
// element e of the int8 operand {{NAME}} (four codes per u32 word, the low byte first)
fn read_{{NAME}}(e: u32) -> f32 { return f32(byte_of({{NAME}}[e >> 2u], e & 3u)); }

//! read_codes_u8
// element e of the uint8 codes {{NAME}} (qlinear_q / qconv_q's output codes 0..255)
fn read_{{NAME}}(e: u32) -> f32 { return f32(extractBits({{NAME}}[e >> 2u], (e & 3u) * 8u, 8u)); }

//! read_codes_u8_centred
// element e of the uint8 codes {{NAME}} less 128 (the int8 matmul's long sums of unsigned
// codes: products within ±128·127, the weight sums times 128 added back by its epilogue)
fn read_{{NAME}}(e: u32) -> f32 {
    return f32(extractBits({{NAME}}[e >> 2u], (e & 3u) * 8u, 8u)) - 128.0;
}

//! read_quantized_centred
// element e of the float32 operand {{NAME}} as its unsigned code less 128 (as above)
fn read_{{NAME}}(e: u32) -> f32 { return f32(code_u8({{NAME}}[e], q_in_scale[0])) - 128.0; }

//! read_quantized
// element e of the float32 operand {{NAME}} as its code ({{CODE}}: code or code_u8) at the
// input scale
fn read_{{NAME}}(e: u32) -> f32 { return f32({{CODE}}({{NAME}}[e], q_in_scale[0])); }

//! scales
// the per-channel weight scales and the input scale (the result is sum · in_scale · w_scale)
@group(0) @binding({{W_AT}}) var<storage, read> q_w_scale: array<f32>;
@group(0) @binding({{IN_AT}}) var<storage, read> q_in_scale: array<f32>;

//! bias
@group(0) @binding({{AT}}) var<storage, read> q_bias: array<f32>;

//! requant
// codes out (qlinear_q / qconv_q): the sum acc of channel ch as the code at the output scale,
// v = acc · m + c (m = in_scale · w_scale[ch] / out_scale, c = bias / out_scale: requant_m,
// requant_c, once per channel where the caller can), clamped to the meta words [lo, hi] at
// {{LO_AT}}, {{LO_AT}} + 1 (i32), as the low byte of a u32; pack_codes packs four of them,
// the first in the low byte
@group(0) @binding({{OUT_AT}}) var<storage, read> q_out_scale: array<f32>;

fn requant_m(ch: u32) -> f32 { return (q_in_scale[0] * q_w_scale[ch]) / q_out_scale[0]; }

fn requant_c(b: f32) -> f32 { return b / q_out_scale[0]; }

fn requant_at(acc: f32, m: f32, c: f32) -> u32 {
    let v = fma(acc, m, c);
    let lo = f32(bitcast<i32>(prm[{{LO_AT}}u]));
    let hi = f32(bitcast<i32>(prm[{{LO_AT}}u + 1u]));
    return bitcast<u32>(round_code(v, lo, hi)) & 0xffu;
}

// four sums of one channel, packed
fn requant4(acc: vec4<f32>, ch: u32, b: f32) -> u32 {
    let m = requant_m(ch);
    let c = requant_c(b);
    return pack_codes(requant_at(acc[0], m, c), requant_at(acc[1], m, c),
                      requant_at(acc[2], m, c), requant_at(acc[3], m, c));
}

fn pack_codes(q0: u32, q1: u32, q2: u32, q3: u32) -> u32 {
    return q0 | (q1 << 8u) | (q2 << 16u) | (q3 << 24u);
}

//! requant_matmul
// the matmul epilogue's code words (shaders/matmul.wgsl, wgpu/compute.py's quads): four
// columns of one row, the channel the row's (q_row: 1×1 convs) or each column's (q_cols:
// Linear; columns past `last` are the padding of the output's rows, any value)
fn q_row(acc: vec4<f32>, ch: u32) -> u32 { return requant4(acc, ch, q_bias[ch]); }

fn q_col(acc: f32, col: u32) -> u32 {
    return requant_at(acc, requant_m(col), requant_c(q_bias[col]));
}

fn q_cols(acc: vec4<f32>, col: u32, last: u32) -> u32 {
    return pack_codes(q_col(acc[0], col), q_col(acc[1], min(col + 1u, last)),
                      q_col(acc[2], min(col + 2u, last)), q_col(acc[3], min(col + 3u, last)));
}
