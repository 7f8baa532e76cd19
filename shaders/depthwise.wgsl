// Depthwise 2-d convolution (groups == C_in, C_out = C_in · multiplier; float32), register
// blocked: a workgroup computes a tile of (LY·BY) × (LX·BX) output pixels for PL output planes
// (n, co) at once. Its lanes first stage the input tile each plane needs, halo included
// (((LY·BY - 1)·SH + (KH - 1)·DH + 1) rows × the same in x), in workgroup memory — zeros where
// the window hangs over the padding or the image, so the taps need no bounds checks — then
// each lane sums a BY × BX block of adjacent outputs from it. One barrier per workgroup; the
// kernel size, stride and dilation are compile-time constants (the tap loops unroll, no div/mod
// per tap), the sizes are meta words. The output is contiguous (N, C_out, OH, OW); the weight
// contiguous (C_out, 1, KH, KW); the input a strided view.
// meta: [planes, C_out, multiplier, OH, OW, H, W, pad_h, pad_w, tiles_x, tiles_per_plane,
//        x_off, sN, sC, sH, sW, has_bias]

@group(0) @binding(0) var<storage, read> prm: array<u32>;
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read> weight: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

const KH: u32 = {{KH}}u;
const KW: u32 = {{KW}}u;
const SH: u32 = {{SH}}u;
const SW: u32 = {{SW}}u;
const DH: u32 = {{DH}}u;
const DW: u32 = {{DW}}u;
const BX: u32 = {{BX}}u;
const BY: u32 = {{BY}}u;
const LX: u32 = {{LX}}u;
const LY: u32 = {{LY}}u;
const PL: u32 = {{PL}}u;
const LANES: u32 = LX * LY * PL;
// the staged input tile of one plane, and the input span of one lane's row of BX outputs
const TW: u32 = (LX * BX - 1u) * SW + (KW - 1u) * DW + 1u;
const TH: u32 = (LY * BY - 1u) * SH + (KH - 1u) * DH + 1u;
const SPAN: u32 = (BX - 1u) * SW + (KW - 1u) * DW + 1u;

var<workgroup> tile: array<f32, PL * TH * TW>;

fn si(j: u32) -> i32 { return bitcast<i32>(prm[j]); }

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

    for (var e = li; e < PL * TH * TW; e = e + LANES) {
        let plane = first + e / (TH * TW);
        let r = e % (TH * TW);
        let yy = iy0 + i32(r / TW);
        let xx = ix0 + i32(r % TW);
        var v = 0.0;
        if (plane < planes && yy >= 0 && yy < si(5) && xx >= 0 && xx < si(6)) {
            let ci = (plane % cout) / prm[2];
            v = src[u32(si(11) + i32(plane / cout) * si(12) + i32(ci) * si(13) + yy * si(14)
                        + xx * si(15))];
        }
        tile[e] = v;
    }
    workgroupBarrier();

    let p = li / (LX * LY);
    let ly = (li / LX) % LY;
    let lx = li % LX;
    let plane = first + p;
    if (plane >= planes) { return; }
    let co = plane % cout;
    var acc: array<f32, BY * BX>;
    var row: array<f32, SPAN>;
    let base = p * TH * TW + ly * BY * SH * TW + lx * BX * SW;
    for (var by = 0u; by < BY; by = by + 1u) {
        for (var ky = 0u; ky < KH; ky = ky + 1u) {
            let r0 = base + (by * SH + ky * DH) * TW;
            for (var s = 0u; s < SPAN; s = s + 1u) { row[s] = tile[r0 + s]; }
            for (var kx = 0u; kx < KW; kx = kx + 1u) {
                let w = weight[(co * KH + ky) * KW + kx];
                for (var bx = 0u; bx < BX; bx = bx + 1u) {
                    acc[by * BX + bx] = acc[by * BX + bx] + row[bx * SW + kx * DW] * w;
                }
            }
        }
    }
    var b = 0.0;
    if (prm[16] == 1u) { b = bias[co]; }
    for (var by = 0u; by < BY; by = by + 1u) {
        let oy = oy0 + ly * BY + by;
        for (var bx = 0u; bx < BX; bx = bx + 1u) {
            let ox = ox0 + lx * BX + bx;
            if (oy < oh && ox < ow) {
                out[(plane * oh + oy) * ow + ox] = acc[by * BX + bx] + b;
            }
        }
    }
}
