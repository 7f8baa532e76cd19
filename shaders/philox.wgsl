// Philox4x32-10 uniform floats, bit-identical to ember.random.philox_uniform: number i is word
// i % 4 of philox(counter = offset + i / 4, key = seed), top 24 bits scaled by 2**-24.
// WGSL has no 64-bit integers: the 32x32→64 products are built from 16-bit halves.
// meta: [n, blocks, offset_lo, offset_hi, seed_lo, seed_hi]

@group(0) @binding(0) var<storage, read> prm: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;

const WG: u32 = {{WG}}u;

{{LIBS}}

fn mulhi(a: u32, b: u32) -> u32 {
    let a0 = a & 0xffffu;
    let a1 = a >> 16u;
    let b0 = b & 0xffffu;
    let b1 = b >> 16u;
    let lh = a0 * b1;
    let hl = a1 * b0;
    let mid = ((a0 * b0) >> 16u) + (lh & 0xffffu) + (hl & 0xffffu);
    return a1 * b1 + (lh >> 16u) + (hl >> 16u) + (mid >> 16u);
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let b = linear_id(gid, nwg, WG);
    if (b >= prm[1]) { return; }
    let lo = prm[2] + b;
    var c0 = lo;
    var c1 = prm[3] + select(0u, 1u, lo < b);
    var c2 = 0u;
    var c3 = 0u;
    var k0 = prm[4];
    var k1 = prm[5];
    for (var r = 0u; r < 10u; r = r + 1u) {
        let h0 = mulhi(0xD2511F53u, c0);
        let l0 = 0xD2511F53u * c0;
        let h1 = mulhi(0xCD9E8D57u, c2);
        let l1 = 0xCD9E8D57u * c2;
        c0 = h1 ^ c1 ^ k0;
        c1 = l1;
        c2 = h0 ^ c3 ^ k1;
        c3 = l0;
        k0 = k0 + 0x9E3779B9u;
        k1 = k1 + 0xBB67AE85u;
    }
    let words = array<u32, 4>(c0, c1, c2, c3);
    let n = prm[0];
    for (var w = 0u; w < 4u; w = w + 1u) {
        let i = b * 4u + w;
        if (i < n) { out[i] = f32(words[w] >> 8u) * 5.9604644775390625e-8; }
    }
}
