// Depthwise 2-d convolution kernels (groups == C_in, C_out = C_in · multiplier; summing in
// float32; a 1-d conv runs with height 1): the forward conv, the two passes of the weight gradient and the
// transposed conv (the input gradient). The kernel size, stride and dilation are compile-time
// constants (the tap loops unroll, no div/mod per tap); the sizes are meta words. Each section
// lists its own meta layout. Launched from core/ember/backends/wgpu/depthwise.py.
// The inputs (IN_T) are f32, or float16 packed two per u32 word: read through read_<name>
// (the read / read_f16 sections, one per buffer, in HELPERS) into f32 registers.

@group(0) @binding(0) var<storage, read> prm: array<u32>;

const KH: u32 = {{KH}}u;
const KW: u32 = {{KW}}u;
const SH: u32 = {{SH}}u;
const SW: u32 = {{SW}}u;
const DH: u32 = {{DH}}u;
const DW: u32 = {{DW}}u;

fn si(j: u32) -> i32 { return bitcast<i32>(prm[j]); }

{{HELPERS}}

//! conv
// Register blocked: a workgroup computes a tile of (LY·BY) × (LX·BX) output pixels for PL
// output planes (n, co) at once. Its lanes first stage the input tile each plane needs, halo
// included (((LY·BY - 1)·SH + (KH - 1)·DH + 1) rows × the same in x), in workgroup memory —
// zeros where the window hangs over the padding or the image, so the taps need no bounds
// checks — then each lane sums a BY × BX block of adjacent outputs from it. One barrier per
// workgroup (CTILE: two). The output is contiguous (N, C_out, OH, OW) (codes: each plane
// padded to whole words); the weight contiguous
// (C_out, 1, KH, KW); the input a strided view. The int8 conv (wgpu/quant.py) runs it on
// codes: the input quantized as it is staged (or its codes read), int8 weights (WEIGHT_T u32)
// unpacked once per workgroup into the wtile floats (W_TILE, W_STAGE: a lane of a plane reads
// them from there, not bytes of its own), the sums rescaled as they are stored (the
// launcher's QUANT key: its extra bindings) — or, ending in codes, requantized (the output
// scale one more binding, the range meta words 17 and 18) and stored four to a u32 word:
// CODES (BX = 4, rows a whole number of words): a lane's four outputs of a row are a word;
// CTILE (the float kernel's blocking): the codes go through workgroup memory and lanes pack
// the tile's words from there (the `pack_codes_tile` section: the tile is a whole plane, or
// its rows are whole words). int8 / uint8 input codes in rows of stride 1 are staged a u32
// word (four codes) per load (`stage_plane_words`).
// meta: [planes, C_out, multiplier, OH, OW, H, W, pad_h, pad_w, tiles_x, tiles_per_plane,
//        x_off, sN, sC, sH, sW, has_bias]
// SRC_T: IN_T, or u32 for int8 / uint8 input codes

@group(0) @binding(1) var<storage, read> src: array<{{SRC_T}}>;
@group(0) @binding(2) var<storage, read> weight: array<{{WEIGHT_T}}>;
@group(0) @binding(3) var<storage, read> bias: array<{{IN_T}}>;
// OUT_T u32 (PAIRS): a float16 output, two neighbouring outputs per word (BX and OW even)
@group(0) @binding(4) var<storage, read_write> out: array<{{OUT_T}}>;

const BX: u32 = {{BX}}u;
const BY: u32 = {{BY}}u;
const LX: u32 = {{LX}}u;
const LY: u32 = {{LY}}u;
const PL: u32 = {{PL}}u;
const LANES: u32 = LX * LY * PL;
// the staged input tile of one plane
const TW: u32 = (LX * BX - 1u) * SW + (KW - 1u) * DW + 1u;
const TH: u32 = (LY * BY - 1u) * SH + (KH - 1u) * DH + 1u;

var<workgroup> tile: array<f32, PL * TH * TW>;
{{W_TILE}}

@compute @workgroup_size(LX * LY * PL)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
    let planes = prm[0];
    let cout = prm[1];
    let oh = prm[3];
    let ow = prm[4];
    let g = wid.x + wid.y * nwg.x;
    let first = (g / prm[10]) * PL;  // the workgroup's first plane
    let t = g % prm[10];
    let oy0 = (t / prm[9]) * (LY * BY);
    let ox0 = (t % prm[9]) * (LX * BX);
    let iy0 = i32(oy0 * SH) - si(7);
    let ix0 = i32(ox0 * SW) - si(8);

    // plane by plane: the plane's offset (runtime divisions) is computed once, the same in
    // every lane
    for (var k = 0u; k < PL; k = k + 1u) {
        let plane = first + k;
        let chan = si(11) + i32(plane / cout) * si(12) + i32((plane % cout) / prm[2]) * si(13);
        stage_plane(k, plane < planes, chan, iy0, ix0, li);
    }
{{W_STAGE}}
    workgroupBarrier();

    let p = li / (LX * LY);
    let ly = (li / LX) % LY;
    let lx = li % LX;
    let plane = first + p;
    // EXIT: lanes past the last plane stop (CTILE: they go on to the barrier before the
    // packing, their sums never stored)
{{EXIT}}
    let co = plane % cout;
    let base = p * TH * TW + ly * BY * SH * TW + lx * BX * SW;
    let wb = co * KH * KW;
    // unrolled by the launcher (Naga keeps indexed local arrays in memory on some drivers):
    // the accumulators a{by}_{bx}, the weights w{ky}_{kx}, then per output row by and kernel
    // row ky the SPAN staged inputs the lane's BX outputs read, and their products
{{ACC_DECL}}
{{BODY}}
    var b = 0.0;
    if (prm[16] == 1u) { b = read_bias(co); }
{{STORES}}
}
{{QUANT}}

//! weight_grad_partial
// The weight gradient's first pass: workgroup (co, chunk) sums, over one chunk of PER_CHUNK of
// the N·OH·OW output positions, grad[n, co, oy, ox] · x[n, co / multiplier, oy·SH + ky·DH -
// pad_h, ox·SW + kx·DW - pad_w] for every tap (ky, kx) (zero outside the input): each lane
// keeps all KH·KW sums for its positions (lane-strided, so the grad reads coalesce), then the
// lanes' sums are added up through workgroup memory. The partial sums go to
// partial[co, chunk, tap]; `weight_grad_sum` adds the chunks up. grad is contiguous
// (N, C_out, OH, OW); the input a strided view.
// meta: [C_out, multiplier, N, OH, OW, H, W, pad_h, pad_w, chunks, PER_CHUNK,
//        x_off, sN, sC, sH, sW]
@group(0) @binding(1) var<storage, read> src: array<{{IN_T}}>;
@group(0) @binding(2) var<storage, read> grad: array<{{IN_T}}>;
@group(0) @binding(3) var<storage, read_write> partial: array<f32>;

const LANES: u32 = {{LANES}}u;
const TAPS: u32 = KH * KW;

var<workgroup> sums: array<f32, LANES * TAPS>;

@compute @workgroup_size(LANES)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
    let cout = prm[0];
    let oh = prm[3];
    let ow = prm[4];
    let chunks = prm[9];
    let g = wid.x + wid.y * nwg.x;
    let co = g / chunks;
    let chunk = g % chunks;
    let pp = oh * ow;
    let start = chunk * prm[10];
    let end = min(start + prm[10], prm[2] * pp);
    let chan = si(11) + i32(co / prm[1]) * si(13);
    // the sums of the KH·KW taps, unrolled by the launcher (named registers, as in `conv`)
{{ACC_DECL}}
    if (co < cout) {
        for (var q = start + li; q < end; q = q + LANES) {
            let n = q / pp;
            let r = q - n * pp;
            let oy = r / ow;
            let gv = read_grad((n * cout + co) * pp + r);
            let base = chan + i32(n) * si(12);
            let iy0 = i32(oy * SH) - si(7);
            let ix0 = i32((r - oy * ow) * SW) - si(8);
            // branch-free taps (out-of-image ones read a clamped address and add zero, even
            // where that value is inf or NaN): straight-line code (lavapipe: 1.8x faster
            // than skipping them)
{{BODY}}
        }
    }
    // lane-major: the writes (stride TAPS, odd for odd kernels) and the reads below (one tap
    // per lane, adjacent) avoid bank conflicts
{{STORES}}
    workgroupBarrier();
    if (co >= cout) { return; }
    for (var t = li; t < TAPS; t = t + LANES) {
        var s = 0.0;
        for (var j = 0u; j < LANES; j = j + 1u) { s = s + sums[j * TAPS + t]; }
        partial[(co * chunks + chunk) * TAPS + t] = s;
    }
}

//! weight_grad_sum
// The weight gradient's second pass: one lane per weight element (co, tap) adds up its chunks'
// partial sums. meta: [C_out · KH · KW, chunks]
@group(0) @binding(1) var<storage, read> partial: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

const LANES: u32 = {{LANES}}u;
const TAPS: u32 = KH * KW;

@compute @workgroup_size(LANES)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * LANES;
    if (i >= prm[0]) { return; }
    let chunks = prm[1];
    let co = i / TAPS;
    let t = i % TAPS;
    var s = 0.0;
    for (var c = 0u; c < chunks; c = c + 1u) { s = s + partial[(co * chunks + c) * TAPS + t]; }
    out[i] = s;
}

//! conv_transpose
// The adjoint of a depthwise conv (the input gradient): a transposed conv with groups == C_out
// and CIG input channels per group (the forward's multiplier), weight contiguous
// (C_out · CIG, 1, KH, KW). Output (n, co, oy, ox) sums x[n, co·CIG + m, qy, qx] ·
// w[co·CIG + m, ky, kx] over the taps whose qy = (oy + pad_h - ky·DH) / SH (and qx likewise)
// is exact. Tiled like `conv`: the lanes stage, for PL output planes, the input rows and
// columns the (LY·BY) × (LX·BX) output tile reaches (zeros outside the input), then each lane
// sums a BY × BX block from workgroup memory. The output is contiguous (N, C_out, OH, OW).
// meta: [planes, C_out, -, OH, OW, H, W, pad_h, pad_w, tiles_x, tiles_per_plane,
//        x_off, sN, sC, sH, sW, has_bias]
@group(0) @binding(1) var<storage, read> src: array<{{IN_T}}>;
@group(0) @binding(2) var<storage, read> weight: array<{{IN_T}}>;
@group(0) @binding(3) var<storage, read> bias: array<{{IN_T}}>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

const BX: u32 = {{BX}}u;
const BY: u32 = {{BY}}u;
const LX: u32 = {{LX}}u;
const LY: u32 = {{LY}}u;
const PL: u32 = {{PL}}u;
const CIG: u32 = {{CIG}}u;
const LANES: u32 = LX * LY * PL;
// input rows / columns one output tile reaches (at most; the first is rounded down)
const TW: u32 = (LX * BX - 1u + (KW - 1u) * DW) / SW + 2u;
const TH: u32 = (LY * BY - 1u + (KH - 1u) * DH) / SH + 2u;

var<workgroup> tile: array<f32, PL * CIG * TH * TW>;

fn floor_div(a: i32, b: i32) -> i32 {
    return select(-((-a + b - 1) / b), a / b, a >= 0);
}

@compute @workgroup_size(LX * LY * PL)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
    let planes = prm[0];
    let cout = prm[1];
    let oh = prm[3];
    let ow = prm[4];
    let g = wid.x + wid.y * nwg.x;
    let first = (g / prm[10]) * PL;
    let t = g % prm[10];
    let oy0 = (t / prm[9]) * (LY * BY);
    let ox0 = (t % prm[9]) * (LX * BX);
    // the first input row / column any output of the tile reads
    let qy0 = floor_div(i32(oy0) + si(7) - i32((KH - 1u) * DH), i32(SH));
    let qx0 = floor_div(i32(ox0) + si(8) - i32((KW - 1u) * DW), i32(SW));

    for (var k = 0u; k < PL * CIG; k = k + 1u) {  // (plane, input m of its group)
        let plane = first + k / CIG;
        let ci = (plane % cout) * CIG + k % CIG;
        let chan = si(11) + i32(plane / cout) * si(12) + i32(ci) * si(13);
        stage_plane(k, plane < planes, chan, qy0, qx0, li);
    }
    workgroupBarrier();

    let p = li / (LX * LY);
    let ly = (li / LX) % LY;
    let lx = li % LX;
    let plane = first + p;
    if (plane >= planes) { return; }
    let co = plane % cout;
    var b = 0.0;
    if (prm[16] == 1u) { b = read_bias(co); }
    for (var by = 0u; by < BY; by = by + 1u) {
        let oy = oy0 + ly * BY + by;
        for (var bx = 0u; bx < BX; bx = bx + 1u) {
            let ox = ox0 + lx * BX + bx;
            // offsets of this output's taps from the tile's first row / column, in input
            // units times the stride (exact multiples are the taps that reach an input)
            let ry = i32(oy) + si(7) - qy0 * i32(SH);
            let rx = i32(ox) + si(8) - qx0 * i32(SW);
            var acc = 0.0;
            for (var m = 0u; m < CIG; m = m + 1u) {
                let base = (p * CIG + m) * TH * TW;
                let wb = (co * CIG + m) * KH * KW;
                for (var ky = 0u; ky < KH; ky = ky + 1u) {
                    let ny = ry - i32(ky * DH);
                    if (ny % i32(SH) != 0) { continue; }
                    let row = base + u32(ny / i32(SH)) * TW;
                    for (var kx = 0u; kx < KW; kx = kx + 1u) {
                        let nx = rx - i32(kx * DW);
                        if (nx % i32(SW) != 0) { continue; }
                        acc = acc + tile[row + u32(nx / i32(SW))] * read_weight(wb + ky * KW + kx);
                    }
                }
            }
            if (oy < oh && ox < ow) { out[(plane * oh + oy) * ow + ox] = acc + b; }
        }
    }
}

//! read
// element e of the float32 buffer {{NAME}}
fn read_{{NAME}}(e: u32) -> f32 { return {{NAME}}[e]; }

//! read_f16
// element e of the float16 buffer {{NAME}}: half e % 2 of word e / 2 (f16_bits_to_f32: exact)
fn read_{{NAME}}(e: u32) -> f32 {
    return f16_bits_to_f32(({{NAME}}[e >> 1u] >> ((e & 1u) * 16u)) & 0xffffu);
}

//! pack_codes_tile
// CTILE: the workgroup's codes (one a u32; PL planes of CR × CW) packed into the output's
// words, the first code in the low byte. WHOLE = 1: the tile is the whole plane, its codes
// are at their place in the plane (oy · OW + ox, written where inside it; the rest stays
// zero, workgroup memory starting zeroed) and its words are the plane's, padded to whole
// words; WHOLE = 0: the codes are at their place in the tile and rows are whole words (OW a
// multiple of 4), so every word of the tile's rows lies in this tile.
const CR: u32 = LY * BY;
const CW: u32 = LX * BX;
const WHOLE: u32 = {{WHOLE}}u;
var<workgroup> ctile: array<u32, PL * CR * CW>;

fn pack_tile(first: u32, planes: u32, oh: u32, ow: u32, oy0: u32, ox0: u32, li: u32) {
    let pw = (oh * ow + 3u) / 4u;  // a plane's words
    for (var e = li; e < PL * CR * CW / 4u; e = e + LANES) {
        let plane = first + e / (CR * CW / 4u);
        let j = e % (CR * CW / 4u);
        let oy = oy0 + j / (CW / 4u);
        let ox = ox0 + 4u * (j % (CW / 4u));
        let word = pack_codes(ctile[4u * e], ctile[4u * e + 1u], ctile[4u * e + 2u],
                              ctile[4u * e + 3u]);
        if (WHOLE == 1u) {
            if (plane < planes && j < pw) { out[plane * pw + j] = word; }
        } else if (plane < planes && oy < oh && ox < ow) {
            out[(plane * oh * ow + oy * ow + ox) >> 2u] = word;
        }
    }
}

//! stage_plane_words
// stage_plane (below) for int8 / uint8 codes whose rows have stride 1 (src: u32 words of
// four codes): a lane takes a word of a staged row — one load for four codes — and writes
// those of its bytes that fall in the tile's TW columns (zeros outside the image). A row of
// TW bytes from any alignment spans at most WPR words.
const WPR: u32 = (TW + 6u) / 4u;

fn stage_plane(slot: u32, valid: bool, chan: i32, y0: i32, x0: i32, li: u32) {
    for (var e = li; e < TH * WPR; e = e + LANES) {
        let r = e / WPR;
        let yy = y0 + i32(r);
        let a0 = chan + yy * si(14) + x0;  // the row's first staged element (maybe < 0)
        let wa = (a0 >> 2u) + i32(e % WPR);
        let c0 = wa * 4 - a0;  // the tile column of the word's first byte
        let row = valid && yy >= 0 && yy < si(5);
        var word = 0u;
        // read only where one of its bytes is an element of the image row
        if (row && x0 + c0 + 3 >= 0 && x0 + c0 < si(6)) { word = src[u32(wa)]; }
        for (var j = 0; j < 4; j = j + 1) {
            let c = c0 + j;
            let xx = x0 + c;
            if (c >= 0 && c < i32(TW)) {
                var v = 0.0;
                if (row && xx >= 0 && xx < si(6)) {
                    v = f32(extractBits({{WORD}}, u32(j) * 8u, 8u));
                }
                tile[slot * TH * TW + r * TW + u32(c)] = v;
            }
        }
    }
}

//! stage_plane
// Tile slot `slot` (TH × TW, the section's) filled from one input plane starting at channel
// offset `chan`, rows from y0 and columns from x0 (zeros outside the image or for an invalid
// plane); the workgroup's lanes share the elements. The caller puts the barrier after it.
fn stage_plane(slot: u32, valid: bool, chan: i32, y0: i32, x0: i32, li: u32) {
    for (var e = li; e < TH * TW; e = e + LANES) {
        let yy = y0 + i32(e / TW);
        let xx = x0 + i32(e % TW);
        var v = 0.0;
        if (valid && yy >= 0 && yy < si(5) && xx >= 0 && xx < si(6)) {
            v = read_src(u32(chan + yy * si(14) + xx * si(15)));
        }
        tile[slot * TH * TW + e] = v;
    }
}
