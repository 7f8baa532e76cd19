// Convolutions as implicit GEMMs (float32): matmul.wgsl's tiles (BM×BK and BK×BN in workgroup
// memory as vec4 words, a TM×TN register tile per lane, unrolled by the launcher) with one
// operand gathered straight from the convolved tensor `x` — the im2col column of the current
// K-tile is built in workgroup memory, never in a buffer. Padding is the zero outside `x`.
// Workgroup z is group g · splits + part; part covers k in [part·kc, part·kc + kc).
// Sections:
//   fwd    y[n, g·cog + r, p] = Σ_k w[r, k] · col[k, n·P + p] (+ bias), k = (ci, tap) or
//          (tap, ci) with TAP_MAJOR (see the section); with
//          TRANSPOSED the column follows the transposed conv's rule (a conv_transpose, which is
//          also a conv's input gradient): input q = (pos + pad − tap·dil) / stride, exact.
//   wgrad  dW[g·cog + r, (ci, tap)] = Σ_{n, p} grad[n, g·cog + r, p] · col[(ci, tap), n·P + p]:
//          a reduction GEMM over images × pixels, split over k into partial sums at o_ss·part.
// meta: [rows, cols, k, splits, kc, x_off, x_sN, x_sC, has_bias, C_out, cin_g, taps, P, o_ss,
//        w_sg, w_sr, w_sc, col_off,
//        per spatial dim d: in_size, out_size, kernel, stride, dilation, pad, x_stride]
// rows = output channels per group; fwd: w element (r, ci, tap) sits at g·w_sg + r·w_sr +
// ci·w_sc + tap (the conv's (C_out, cin_g, *kernel) or the conv_transpose's (C_in, cog,
// *kernel) weight, contiguous); wgrad: w is the contiguous (N, C_out, *out) output gradient.
// col_off: the first column of this dispatch (a grid wider than the device's limit is split).
// float16 (IN_T u32): x, w and bias are read from their packed words into f32 registers (the
// read_f16 section), the sums stay f32; OUT_T u32: fwd stores pairs of columns as one word.
// W_T is w's element type: IN_T, or u32 for the int8 conv's weight codes (wgpu/quant.py: the
// float32 x quantized as it loads, read through HELPERS' read_x / read_w); X_T x's: IN_T, or
// u32 for int8 / uint8 input codes.

@group(0) @binding(0) var<storage, read> prm: array<u32>;
@group(0) @binding(1) var<storage, read> x: array<{{X_T}}>;
@group(0) @binding(2) var<storage, read> w: array<{{W_T}}>;
@group(0) @binding(3) var<storage, read> bias: array<{{IN_T}}>;
@group(0) @binding(4) var<storage, read_write> out: array<{{OUT_T}}>;

{{HELPERS}}

const BM: u32 = {{BM}}u;
const BN: u32 = {{BN}}u;
const BK: u32 = {{BK}}u;
const TM: u32 = {{TM}}u;
const TN: u32 = {{TN}}u;
const LX: u32 = BN / TN;
const LY: u32 = BM / TM;
const AP: u32 = BM + 4u;
const ND: i32 = {{ND}};
const TRANSPOSED: bool = {{TRANSPOSED}};
const UNIT_STRIDE: bool = {{UNIT_STRIDE}};  // every stride is 1
const TAP_MAJOR: bool = {{TAP_MAJOR}};
// the kernel's size per dim and its tap count, as constants: the per-load tap decompositions
// divide by constants (a multiply and a shift) instead of by meta words
const KS = array<u32, 3>({{KSIZE}});
const TAPS: u32 = {{TAPS}}u;
// likewise the pixel grid (fwd: the output's, wgrad: the output gradient's) and its size P
const OS = array<u32, 3>({{OSIZE}});
const PP: u32 = {{PP}}u;

var<workgroup> As: array<vec4<f32>, AP / 4u * BK>;
var<workgroup> Bs: array<vec4<f32>, BK * BN / 4u>;

fn si(j: u32) -> i32 { return bitcast<i32>(prm[j]); }

var<private> grp: u32;
var<private> part: u32;

// The lane's B-tile column is the same at every k step (the launcher's loads give lane li the
// column li % BN, as lanes is a multiple of BN): its part of the gather's address is set once,
// by the section's setup_column, leaving only the k row's part to each load.
var<private> c_off: i32;
var<private> c_org: array<i32, 3>;

@compute @workgroup_size(LX, LY, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
    grp = wid.z / prm[3];
    // the loop bounds come from locals: a private variable is per-lane to WGSL's uniformity
    // analysis, and the barriers inside the loop need uniform control flow (Tint checks it)
    let split = wid.z % prm[3];
    part = split;
    let n = prm[0];
    let m = prm[1];
    let kbeg = split * prm[4];
    let kk = min(prm[2], kbeg + prm[4]);
    let row0 = wid.y * BM;
    let col0 = prm[17] + wid.x * BN;
    setup_column(col0 + li % BN);
{{ACC_DECL}}
    for (var k0 = kbeg; k0 < kk; k0 = k0 + BK) {
        setup_k(k0);
        let full = row0 + BM <= n && col0 + BN <= m && k0 + BK <= kk;
{{LOADS}}
        workgroupBarrier();
{{INNER}}
        workgroupBarrier();
    }
{{STORE}}
}

//! fwd
// A: the weight; B: the column gathered from x (column = n·P + p). k = ci·taps + tap, or with
// TAP_MAJOR (the launcher's choice when cin_g is a multiple of BK) k = tap·cin_g + ci, so that
// a K-tile shares one tap: setup_k then finds the lane's x offset and bounds once per step and
// each load is one multiply-add from it.
var<private> k_tap: u32;
var<private> k_ci0: u32;
var<private> k_at: At;

fn load_a(full: bool, r: u32, c: u32, row0: u32, k0: u32, n: u32, kk: u32) -> f32 {
    let k = k0 + c;
    if (full || (row0 + r < n && k < kk)) {
        var at = i32(grp) * si(14u) + i32(row0 + r) * si(15u);
        if (TAP_MAJOR) {
            at = at + i32(k_ci0 + c) * si(16u) + i32(k_tap);
        } else {
            at = at + i32(k / TAPS) * si(16u) + i32(k % TAPS);
        }
        return read_w(u32(at));
    }
    return 0.0;
}

// column n·P + p: the image's offset and, per dim, the window origin o·stride − pad (the
// transposed rule: o + pad)
fn setup_column(col: u32) {
    let pp = prm[12];
    var pos = col % pp;
    c_off = si(5u) + i32(col / pp) * si(6u) + i32(grp * prm[10]) * si(7u);
    for (var d = ND - 1; d >= 0; d = d - 1) {
        let b = 18u + u32(d) * 7u;
        let o = pos % prm[b + 1u];
        pos = pos / prm[b + 1u];
        if (TRANSPOSED) {
            c_org[d] = i32(o) + si(b + 5u);
        } else {
            c_org[d] = i32(o * prm[b + 3u]) - si(b + 5u);
        }
    }
}

struct At { off: i32, inside: bool }

// the lane's column at kernel tap t: x offset of channel 0 of the group and whether inside x
fn tap_at(t: u32) -> At {
    var tap = t;
    var off = c_off;
    var inside = true;
    for (var d = ND - 1; d >= 0; d = d - 1) {
        let b = 18u + u32(d) * 7u;
        var kd = tap;
        if (d > 0) {
            kd = tap % KS[d];
            tap = tap / KS[d];
        }
        var coord: i32;
        if (TRANSPOSED) {  // input q = (pos + pad − k·dil) / stride, when exact
            let num = c_org[d] - i32(kd * prm[b + 4u]);
            if (UNIT_STRIDE) {  // no division (slow on CPUs, lavapipe)
                coord = num;
            } else {
                let st = si(b + 3u);
                coord = num / st;
                inside = inside && num >= 0 && coord * st == num;
            }
        } else {
            coord = c_org[d] + i32(kd * prm[b + 4u]);
        }
        inside = inside && coord >= 0 && coord < si(b);
        off = off + coord * si(b + 6u);
    }
    return At(off, inside);
}

fn setup_k(k0: u32) {
    if (TAP_MAJOR) {
        k_tap = k0 / prm[10];
        k_ci0 = k0 % prm[10];
        k_at = tap_at(k_tap);
        k_at.off = k_at.off + i32(k_ci0) * si(7u);
    }
}

fn load_b(full: bool, r: u32, c: u32, col0: u32, k0: u32, m: u32, kk: u32) -> f32 {
    let k = k0 + r;
    if (k < kk && col0 + c < m) {
        if (TAP_MAJOR) {
            if (k_at.inside) { return read_x(u32(k_at.off + i32(r) * si(7u))); }
        } else {
            let at = tap_at(k % TAPS);
            if (at.inside) { return read_x(u32(at.off + i32(k / TAPS) * si(7u))); }
        }
    }
    return 0.0;
}

// store / store2 / store4: the fwd_store, fwd_store_pairs or fwd_store_codes section, by the
// output's dtype

//! wgrad
// A: the output gradient (k = n·P + p); B: the column gathered from x (column = ci·taps + tap)
fn load_a(full: bool, r: u32, c: u32, row0: u32, k0: u32, n: u32, kk: u32) -> f32 {
    let k = k0 + c;
    if (full || (row0 + r < n && k < kk)) {
        return read_w(((k / PP) * prm[9] + grp * prm[0] + row0 + r) * PP + k % PP);
    }
    return 0.0;
}

fn setup_k(k0: u32) {}

// column ci·taps + tap: the channel's offset and, per dim, the tap's shift k·dil − pad
fn setup_column(col: u32) {
    let taps = prm[11];
    var tap = col % taps;
    c_off = si(5u) + i32(grp * prm[10] + col / taps) * si(7u);
    for (var d = ND - 1; d >= 0; d = d - 1) {
        let b = 18u + u32(d) * 7u;
        let kd = tap % prm[b + 2u];
        tap = tap / prm[b + 2u];
        c_org[d] = i32(kd * prm[b + 4u]) - si(b + 5u);
    }
}

fn load_b(full: bool, r: u32, c: u32, col0: u32, k0: u32, m: u32, kk: u32) -> f32 {
    let k = k0 + r;
    if (k < kk && col0 + c < m) {
        var pos = k % PP;
        var off = c_off + i32(k / PP) * si(6u);
        var inside = true;
        for (var d = ND - 1; d >= 0; d = d - 1) {
            let b = 18u + u32(d) * 7u;
            var o = pos;
            if (d > 0) {
                o = pos % OS[d];
                pos = pos / OS[d];
            }
            let coord = c_org[d] + i32(o * prm[b + 3u]);
            inside = inside && coord >= 0 && coord < si(b);
            off = off + coord * si(b + 6u);
        }
        if (inside) { return read_x(u32(off)); }
    }
    return 0.0;
}

fn store(r: u32, col: u32, v: f32) {
    if (r < prm[0] && col < prm[1]) {
        out[part * prm[13] + (grp * prm[0] + r) * prm[1] + col] = v;
    }
}

//! read
// element e of an operand
fn read_x(e: u32) -> f32 { return x[e]; }
fn read_w(e: u32) -> f32 { return w[e]; }
fn read_bias(e: u32) -> f32 { return bias[e]; }

//! read_f16
// element e of a float16 operand: half e % 2 of word e / 2 (exact, subnormals included)
fn half_at(word: u32, e: u32) -> f32 { return f16_bits_to_f32((word >> ((e & 1u) * 16u)) & 0xffffu); }
fn read_x(e: u32) -> f32 { return half_at(x[e >> 1u], e); }
fn read_w(e: u32) -> f32 { return half_at(w[e >> 1u], e); }
fn read_bias(e: u32) -> f32 { return half_at(bias[e >> 1u], e); }

//! fwd_store
// the fwd sum at (row r, column col) of a float32 output (times the launcher's SCALE: the
// int8 conv's code sums rescaled, wgpu/quant.py), plus the bias
fn store(r: u32, col: u32, v: f32) {
    if (r < prm[0] && col < prm[1]) {
        let co = grp * prm[0] + r;
        var y = v{{SCALE}};
        if (prm[8] == 1u) { y = y + read_bias(co); }
        out[((col / PP) * prm[9] + co) * PP + col % PP] = y;
    }
}

//! fwd_store_pairs
// float16 output (PP even, col even): columns col and col + 1 are neighbours in one image, so
// one word; the launcher's stores come in pairs (m is even too)
fn store2(r: u32, col: u32, v0: f32, v1: f32) {
    if (r < prm[0] && col < prm[1]) {
        let co = grp * prm[0] + r;
        var b = 0.0;
        if (prm[8] == 1u) { b = read_bias(co); }
        out[(((col / PP) * prm[9] + co) * PP + col % PP) >> 1u] = pack_f16(v0 + b, v1 + b);
    }
}

//! fwd_store_codes
// int8 / uint8 codes out (qconv_q; PP a multiple of 4, so columns col .. col + 3 are
// neighbours in one image and one u32 word): the four sums of row r requantized and packed
// (requant4: shaders/lib_quant.wgsl)
fn store4(r: u32, col: u32, acc: vec4<f32>) {
    if (r < prm[0] && col < prm[1]) {
        let co = grp * prm[0] + r;
        var b = 0.0;
        if (prm[8] == 1u) { b = read_bias(co); }
        out[(((col / PP) * prm[9] + co) * PP + col % PP) >> 2u] = requant4(acc, co, b);
    }
}
