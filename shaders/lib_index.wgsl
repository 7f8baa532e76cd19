// Strided indexing: a tensor view is buffer + shape + strides + offset (in elements). Shapes
// and strides live in the `prm` words of each dispatch (strides as bitcast i32: they can be
// 0 for broadcast dims and negative for reversed slices).

// Offset (relative to the view's own offset) of the element with row-major index `i` over the
// `nd` sizes at prm[sh..] in a view whose strides are at prm[st..].
fn strided_offset(i: u32, nd: u32, sh: u32, st: u32) -> i32 {
    var rem = i;
    var off = 0;
    for (var d = i32(nd) - 1; d >= 0; d = d - 1) {
        let size = prm[sh + u32(d)];
        off = off + i32(rem % size) * bitcast<i32>(prm[st + u32(d)]);
        rem = rem / size;
    }
    return off;
}

// Linear id over a 2-d grid of workgroups (one dimension tops out at 65535 groups).
fn linear_id(gid: vec3<u32>, nwg: vec3<u32>, wg: u32) -> u32 {
    return gid.x + gid.y * nwg.x * wg;
}

//! strided_inputs
// The meta layout of the map and fused kernels: [n, nd, shape[nd], then per input k: offset,
// contiguous flag, strides[nd], then the kernel's parameters]. Needs `prm` and `NIN`.

// Element offset in input k's buffer of the output element with row-major index i.
fn in_offset(i: u32, k: u32) -> u32 {
    let nd = prm[1];
    let base = 2u + nd + k * (nd + 2u);
    let off = bitcast<i32>(prm[base]);
    if (prm[base + 1u] == 1u) { return u32(off) + i; }
    return u32(off + strided_offset(i, nd, 2u, base + 2u));
}

// Parameter j (its bit pattern) after the inputs' words.
fn param(j: u32) -> u32 {
    let nd = prm[1];
    return prm[2u + nd + NIN * (nd + 2u) + j];
}
