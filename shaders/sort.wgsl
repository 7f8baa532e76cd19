// Stable sort along the last dim of a view: bitonic sort of (key, original index) pairs over
// lines padded to a power of two P2, one dispatch per (k, j) stage. Ordering: padding last;
// NaN last ascending and first descending; equal keys keep their original order.
// meta for sort_init: [lines, len, p2, desc, nd, offset, stride_dim, outer_shape, outer_strides]
// meta for sort_step/sort_final: [lines, len, p2, desc, k, j]

@group(0) @binding(0) var<storage, read> prm: array<u32>;
{{BINDINGS}}

const WG: u32 = {{WG}}u;

{{LIBS}}

fn before(ka: {{CT}}, ia: i32, kb: {{CT}}, ib: i32) -> bool {
    let len = i32(prm[1]);
    let pa = ia >= len;
    let pb = ib >= len;
    if (pa || pb) {
        if (pa && pb) { return ia < ib; }
        return pb;
    }
    let desc = prm[3] == 1u;
    let na = is_nan_ct(ka);
    let nb = is_nan_ct(kb);
    if (na || nb) {
        if (na && nb) { return ia < ib; }
        return select(nb, na, desc);
    }
    if (ka != kb) { return select((ka < kb), (ka > kb), desc); }
    return ia < ib;
}

//! init
@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = linear_id(gid, nwg, WG);
    let p2 = prm[2];
    if (t >= prm[0] * p2) { return; }
    let line = t / p2;
    let p = t % p2;
    let len = prm[1];
    let nd = prm[4];
    var v: {{CT}} = {{ZERO}};
    if (p < len) {
        let off = bitcast<i32>(prm[5]) + strided_offset(line, nd, 7u, 7u + nd)
            + i32(p) * bitcast<i32>(prm[6]);
        v = src[u32(off)];
    }
    keys[t] = v;
    idx[t] = i32(p);
}

//! step
@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = linear_id(gid, nwg, WG);
    let p2 = prm[2];
    if (t >= prm[0] * p2) { return; }
    let p = t % p2;
    let k = prm[4];
    let j = prm[5];
    let q = p ^ j;
    if (q <= p) { return; }
    let u = t - p + q;
    let ka = keys[t];
    let ia = idx[t];
    let kb = keys[u];
    let ib = idx[u];
    let up = (p & k) == 0u;
    var swap: bool;
    if (up) { swap = before(kb, ib, ka, ia); } else { swap = before(ka, ia, kb, ib); }
    if (swap) {
        keys[t] = kb;
        idx[t] = ib;
        keys[u] = ka;
        idx[u] = ia;
    }
}

//! final
@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = linear_id(gid, nwg, WG);
    let len = prm[1];
    if (t >= prm[0] * len) { return; }
    let line = t / len;
    let src_t = line * prm[2] + t % len;
    out_v[t] = keys[src_t];
    out_i[t] = idx[src_t];
}
