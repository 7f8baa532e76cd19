// Body for `map.wgsl` (torch.scatter, deterministic): each output element walks the index
// entries of its line along `dim` that point at it; "none" keeps the last match, "add" sums.
// Input 0 is x, input 1 the index and input 2 src (both viewed with x's shape; only
// coordinates inside the index's extent are read).
// params: [dim, index_dim_size, index_stride_dim, src_stride_dim, ishape[nd]]
fn compute(i: u32) -> {{OUT_CT}} {
    let nd = prm[1];
    let dim = param(0u);
    let len = param(1u);
    let base_i = 2u + nd + 1u * (nd + 2u);
    let base_s = 2u + nd + 2u * (nd + 2u);
    let pshape = 2u + nd + NIN * (nd + 2u) + 4u;
    var rem = i;
    var want = 0u;
    var off_i = bitcast<i32>(prm[base_i]);
    var off_s = bitcast<i32>(prm[base_s]);
    var inside = true;
    for (var d = i32(nd) - 1; d >= 0; d = d - 1) {
        let ud = u32(d);
        let c = rem % prm[2u + ud];
        rem = rem / prm[2u + ud];
        if (ud == dim) {
            want = c;
        } else {
            if (c >= prm[pshape + ud]) { inside = false; }
            off_i = off_i + i32(c) * bitcast<i32>(prm[base_i + 2u + ud]);
            off_s = off_s + i32(c) * bitcast<i32>(prm[base_s + 2u + ud]);
        }
    }
    var acc = load_in0(in_offset(i, 0u));
    if (!inside) { return acc; }
    let si = bitcast<i32>(param(2u));
    let ss = bitcast<i32>(param(3u));
    for (var j = 0u; j < len; j = j + 1u) {
        if (u32(load_in1(u32(off_i + i32(j) * si))) == want) {
            {{ACCUMULATE}}
        }
    }
    return acc;
}
