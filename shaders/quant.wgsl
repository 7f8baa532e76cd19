// Quantized convolutions other than 1×1 and depthwise (ember.contract.quantized), int8 codes
// packed four per u32 word (the low byte first, as the int8 tensors are stored):
// - pack_patches: im2col and quantization (or the input's int8 / uint8 codes) in one pass:
//   (G, N·OH·OW, K4) words per group;
// - pack_weight: an int8 (R, K) weight whose rows are not word-aligned (K % 4 != 0) into
//   (R, K4) words;
// - gemm: (G, M, K4) codes times (G·NC, K4) weight codes, four int8 products per word
//   ({{DOT}}: the built-in dot4I8Packed where the adapter has packed_4x8_integer_dot_product,
//   else dot4_unpacked below), int32 sums, rescaled with the bias as they are stored.
// code() and byte_of() come from shaders/lib_quant.wgsl. Launched from
// core/ember/backends/wgpu/quant.py.

@group(0) @binding(0) var<storage, read> prm: array<u32>;

fn dot4_unpacked(a: u32, b: u32) -> i32 {
    return byte_of(a, 0u) * byte_of(b, 0u) + byte_of(a, 1u) * byte_of(b, 1u)
         + byte_of(a, 2u) * byte_of(b, 2u) + byte_of(a, 3u) * byte_of(b, 3u);
}

fn lane(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * 64u;
}

//! pack_patches
// The input x is a strided float32 view quantized at the input scale, or int8 / uint8 codes
// read as they are (read_x from shaders/lib_quant.wgsl, the launcher's READ).
// meta: [G, NP, K4, KG, C, H, W, CG, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW, x_off, sN, sC,
//        sH, sW]
@group(0) @binding(1) var<storage, read> x: array<{{X_T}}>;
@group(0) @binding(2) var<storage, read> q_in_scale: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;

fn si(j: u32) -> i32 { return bitcast<i32>(prm[j]); }

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = lane(gid, nwg);
    let np = prm[1];
    let k4 = prm[2];
    if (i >= prm[0] * np * k4) { return; }
    let gi = i / (np * k4);
    let row = (i / k4) % np;
    let first = (i % k4) * 4u;
    let p = prm[16] * prm[17];
    let n = row / p;
    let oy = i32((row % p) / prm[17]);
    let ox = i32((row % p) % prm[17]);
    let taps = prm[8] * prm[9];
    var word = 0u;
    for (var t = 0u; t < 4u; t++) {
        let k = first + t;
        if (k < prm[3]) {
            let c = gi * prm[7] + k / taps;
            let tap = k % taps;
            let iy = oy * si(10) - si(12) + i32(tap / prm[9]) * si(14);
            let ix = ox * si(11) - si(13) + i32(tap % prm[9]) * si(15);
            if (iy >= 0 && iy < si(5) && ix >= 0 && ix < si(6)) {
                let at = si(18) + i32(n) * si(19) + i32(c) * si(20) + iy * si(21) + ix * si(22);
                word = word | ((bitcast<u32>(i32(read_x(u32(at)))) & 0xffu) << (8u * t));
            }
        }
    }
    out[i] = word;
}

//! pack_weight
// meta: [R, K, K4, w_off (bytes)]
@group(0) @binding(1) var<storage, read> w: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = lane(gid, nwg);
    let k = prm[1];
    let k4 = prm[2];
    if (i >= prm[0] * k4) { return; }
    let row = i / k4;
    let first = (i % k4) * 4u;
    var word = 0u;
    for (var t = 0u; t < 4u; t++) {
        if (first + t < k) {
            let b = prm[3] + row * k + first + t;
            word = word | (((w[b >> 2u] >> (8u * (b & 3u))) & 0xffu) << (8u * t));
        }
    }
    out[i] = word;
}

//! gemm
// A workgroup computes a 32 × 32 output tile of one group (workgroup z); each of its 64 lanes
// a 4 × 4 block (rows ly + 8i, columns lx + 8j), from 32 × 8-word tiles of both operands
// staged in workgroup memory.
// meta: [M, NC, K4, P, C_OUT, has_bias]; output element (row, column c of group g):
// out[(row / P) · C_OUT · P + (g · NC + c) · P + row % P] (P = 1, C_OUT = NC: row-major)
@group(0) @binding(1) var<storage, read> a: array<u32>;
@group(0) @binding(2) var<storage, read> w: array<u32>;
@group(0) @binding(3) var<storage, read> w_scale: array<f32>;
@group(0) @binding(4) var<storage, read> bias: array<f32>;
@group(0) @binding(5) var<storage, read> in_scale: array<f32>;
@group(0) @binding(6) var<storage, read_write> out: array<f32>;

var<workgroup> As: array<u32, 256>;  // [k word][row]
var<workgroup> Ws: array<u32, 256>;  // [k word][column]

@compute @workgroup_size(8, 8)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
    let m = prm[0];
    let nc = prm[1];
    let k4 = prm[2];
    let g = wid.z;
    let row0 = wid.y * 32u;
    let col0 = wid.x * 32u;
    let a_base = g * m * k4;
    let w_base = g * nc * k4;
    var acc: array<i32, 16>;
    for (var k0 = 0u; k0 < k4; k0 += 8u) {
        for (var t = 0u; t < 4u; t++) {
            let e = li + t * 64u;
            let r = e / 8u;
            let kk = e % 8u;
            var av = 0u;
            var wv = 0u;
            if (k0 + kk < k4) {
                if (row0 + r < m) { av = a[a_base + (row0 + r) * k4 + k0 + kk]; }
                if (col0 + r < nc) { wv = w[w_base + (col0 + r) * k4 + k0 + kk]; }
            }
            As[kk * 32u + r] = av;
            Ws[kk * 32u + r] = wv;
        }
        workgroupBarrier();
        for (var kk = 0u; kk < 8u; kk++) {
            var wr: array<u32, 4>;
            for (var j = 0u; j < 4u; j++) { wr[j] = Ws[kk * 32u + lid.x + 8u * j]; }
            for (var i = 0u; i < 4u; i++) {
                let ar = As[kk * 32u + lid.y + 8u * i];
                for (var j = 0u; j < 4u; j++) {
                    acc[i * 4u + j] = acc[i * 4u + j] + {{DOT}}(ar, wr[j]);
                }
            }
        }
        workgroupBarrier();
    }
    let p = prm[3];
    let cout = prm[4];
    let s = in_scale[0];
    for (var i = 0u; i < 4u; i++) {
        let r = row0 + lid.y + 8u * i;
        if (r >= m) { continue; }
        for (var j = 0u; j < 4u; j++) {
            let c = col0 + lid.x + 8u * j;
            if (c >= nc) { continue; }
            let ch = g * nc + c;
            var v = f32(acc[i * 4u + j]) * (s * w_scale[ch]);
            if (prm[5] != 0u) { v = v + bias[ch]; }
            out[(r / p) * cout * p + ch * p + r % p] = v;
        }
    }
}
