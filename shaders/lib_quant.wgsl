// Quantization helpers: the int8 code of a float (shaders/quant.wgsl's kernels), and the
// operand reads and rescaling bindings that run the tuned float kernels — the matmul of
// shaders/matmul.wgsl, the depthwise conv of shaders/depthwise.wgsl — on int8 codes held as
// f32 (products and sums of the codes are exact integers in f32 while K·127² < 2²⁴, K·255·127
// for unsigned input codes; wgpu/quant.py keeps longer sums off this path). Launched from
// core/ember/backends/wgpu/quant.py.

//! code
// the int8 code of x at scale s: rounded half away from zero, clamped to ±127
fn code(x: f32, s: f32) -> i32 {
    let v = x / s;
    let q = i32(min(floor(abs(v) + 0.5), 127.0));
    return select(q, -q, v < 0.0);
}

// the unsigned code (qlinear_u8 / qconv_u8): rounded half up, clamped to 0..255
fn code_u8(x: f32, s: f32) -> i32 {
    return i32(clamp(floor(x / s + 0.5), 0.0, 255.0));
}

// byte j (sign-extended) of a packed word
fn byte_of(word: u32, j: u32) -> i32 {
    return extractBits(bitcast<i32>(word), j * 8u, 8u);
}

//! read_codes
// element e of the int8 operand {{NAME}} (four codes per u32 word, the low byte first)
fn read_{{NAME}}(e: u32) -> f32 { return f32(byte_of({{NAME}}[e >> 2u], e & 3u)); }

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
