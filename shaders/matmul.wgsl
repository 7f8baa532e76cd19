// Batched matmul, shared-memory tiles of BM×BK / BK×BN and a TM×TN register tile per lane.
// Both tiles live in shared memory as vec4 words (A k-major with a padded row, AP), so each
// k step is TM/4 + TN/4 128-bit loads and TM·TN/4 vec4 multiply-adds per lane; neighbouring
// lanes read neighbouring words. The register tile is unrolled by the launcher.
// Operands are strided views (offset, batch/row/col strides), so transposed and broadcast
// operands need no copy. Tile sizes come from the device's limits (kernel layer).
// meta: [z0, n, m, k, a_off, a_sb, a_sr, a_sc, b_off, b_sb, b_sr, b_sc, o_off, o_sb, o_sr,
//        splits, kc, o_ss]
// The output's columns are contiguous; its offset/strides let a conv write one batch chunk.
// float16 operands stay packed (two per u32 word, the low half first) and are converted to
// f32 as the tiles load; a float16 result is stored as pairs of columns, one word each (the
// launcher makes sure each pair is a word of this output alone).
// Other element types come with their own read_a / read_b (IN_A, IN_B: the int8 matmul of
// wgpu/quant.py reads int8 codes and quantizes float32 inputs as the tiles load).
// Split-K: workgroup z covers batch z / splits and the k range of part z % splits (kc long),
// writing its partial sums at o_ss · part (the launcher adds the parts), so a product with
// few output tiles and a long k still fills the device.
// Integer sums of any length (the int8 matmul, FLUSH and TOTAL; empty for float products):
// the f32 accumulators hold exact integers for a bounded run of k steps only, so every so
// many steps they are moved into i32 accumulators and restarted, and after the loop the i32
// total is converted to f32 once (rounded once, as the exact sum would be) for the epilogue.

@group(0) @binding(0) var<storage, read> prm: array<u32>;
@group(0) @binding(1) var<storage, read> a: array<{{IN_A}}>;
@group(0) @binding(2) var<storage, read> b: array<{{IN_B}}>;
@group(0) @binding(3) var<storage, read_write> out: array<{{OUT_T}}>;

const BM: u32 = {{BM}}u;
const BN: u32 = {{BN}}u;
const BK: u32 = {{BK}}u;
const TM: u32 = {{TM}}u;
const TN: u32 = {{TN}}u;
const LX: u32 = BN / TN;
const LY: u32 = BM / TM;
const AP: u32 = BM + 4u;

// vec4 words: lane (x, y) owns rows 4(y + LY·i) .. +3 and columns 4(x + LX·j) .. +3
var<workgroup> As: array<vec4<{{CT}}>, AP / 4u * BK>;
var<workgroup> Bs: array<vec4<{{CT}}>, BK * BN / 4u>;

fn s(j: u32) -> i32 { return bitcast<i32>(prm[j]); }

var<private> a_base: i32;
var<private> b_base: i32;
var<private> a_sr: i32;
var<private> a_sc: i32;
var<private> b_sr: i32;
var<private> b_sc: i32;

{{HELPERS}}

// element (r, c) of the A tile (rows row0.., k k0..) or B tile, zero outside the operand
fn load_a(full: bool, r: u32, c: u32, row0: u32, k0: u32, n: u32, kk: u32) -> {{CT}} {
    if (full || (row0 + r < n && k0 + c < kk)) {
        return read_a(u32(a_base + i32(r) * a_sr + i32(k0 + c) * a_sc));
    }
    return {{ZERO}};
}

fn load_b(full: bool, r: u32, c: u32, col0: u32, k0: u32, m: u32, kk: u32) -> {{CT}} {
    if (full || (k0 + r < kk && col0 + c < m)) {
        return read_b(u32(b_base + i32(k0 + r) * b_sr + i32(c) * b_sc));
    }
    return {{ZERO}};
}

@compute @workgroup_size(LX, LY, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
    let z = prm[0] + wid.z;
    let batch = z / prm[15];
    let part = z % prm[15];
    let n = prm[1];
    let m = prm[2];
    let kbeg = part * prm[16];
    let kk = min(prm[3], kbeg + prm[16]);
    let row0 = wid.y * BM;
    let col0 = wid.x * BN;
    a_base = s(4) + i32(batch) * s(5) + i32(row0) * s(6);
    b_base = s(8) + i32(batch) * s(9) + i32(col0) * s(11);
    a_sr = s(6);
    a_sc = s(7);
    b_sr = s(10);
    b_sc = s(11);
    // the register tile: TM·TN/4 vec4 accumulators, named and unrolled by the launcher
    // (Naga keeps indexed local arrays in memory on some drivers)
{{ACC_DECL}}
    for (var k0 = kbeg; k0 < kk; k0 = k0 + BK) {
        // tile loads (unrolled by the launcher: BM·BK / lanes and BK·BN / lanes per lane)
        let full = row0 + BM <= n && col0 + BN <= m && k0 + BK <= kk;
{{LOADS}}
        workgroupBarrier();
{{INNER}}
        workgroupBarrier();
{{FLUSH}}
    }
{{TOTAL}}
    let o_base = s(12) + i32(part) * s(17) + i32(batch) * s(13);
{{STORE}}
}

//! read
// element e of an operand
fn read_a(e: u32) -> {{CT}} { return a[e]; }
fn read_b(e: u32) -> {{CT}} { return b[e]; }

//! read_f16
// element e of a float16 operand: half e % 2 of word e / 2 (exact, subnormals included)
fn read_a(e: u32) -> f32 { return f16_bits_to_f32((a[e >> 1u] >> ((e & 1u) * 16u)) & 0xffffu); }
fn read_b(e: u32) -> f32 { return f16_bits_to_f32((b[e >> 1u] >> ((e & 1u) * 16u)) & 0xffffu); }

//! pack_f16
// two results as one float16 word (round half to even, as the backend's casts)
fn pack_f16(x: f32, y: f32) -> u32 { return f32_to_f16_bits(x) | (f32_to_f16_bits(y) << 16u); }
