// The body of a fused elementwise kernel, rendered into map.wgsl's frame by
// ember/backends/wgpu/fused.py. The frame loads leaf k (a strided view of the output's shape)
// into `xk`; the body computes one `let tN` per node of the fused graph, in order, so a
// value used twice is computed once. Scalar constants are read from the meta words
// (`param(j)`, their bit patterns), not written into the code: one pipeline serves every
// value of them. A node of a narrow dtype rounds (float16) or wraps (int8, uint8) its result,
// as the eager kernels do when they store it.

fn round_f16(x: f32) -> f32 { return f16_bits_to_f32(f32_to_f16_bits(x)); }
fn wrap_i8(x: i32) -> i32 { return extractBits(x, 0u, 8u); }
fn wrap_u8(x: i32) -> i32 { return x & 255; }

fn compute(i: u32) -> {{OUT_CT}} {
{{LOADS}}
{{EXPR}}
}
