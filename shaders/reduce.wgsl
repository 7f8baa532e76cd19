// Reductions over any set of dims, with arg-reductions. The input view is split into kept dims
// (the output, row-major) and reduced dims (K elements per output).
// meta: [m, k, then what `element` reads: for section `strided`, nk, nr, offset,
//        kept_shape[nk], kept_strides[nk], red_shape[nr], red_strides[nr]]
// `reduce_wg`: one workgroup per output, strided loop then a shared-memory tree;
// `reduce_lane`: one lane per output (small K);
// section `subgroup` (only where the device has the "subgroup" feature): `reduce_sg`, like
// `reduce_wg` but the tree is subgroup operations plus one barrier.
// The kernels call `element(o, k)`, the k-th reduced element of output o: section `strided`
// reads it from one strided view; a fused reduction (shaders/fused_reduce.wgsl) computes it.

@group(0) @binding(0) var<storage, read> prm: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<{{OUT_T}}>;

const WG: u32 = {{WG}}u;

{{LIBS}}

struct Acc { v: {{CT}}, i: i32 }

fn better_max(x: {{CT}}, y: {{CT}}) -> bool { return (is_nan_ct(x) && !is_nan_ct(y)) || x > y; }
fn better_min(x: {{CT}}, y: {{CT}}) -> bool { return (is_nan_ct(x) && !is_nan_ct(y)) || x < y; }

fn comb_sum(a: Acc, b: Acc) -> Acc { return Acc(a.v + b.v, 0); }
fn comb_prod(a: Acc, b: Acc) -> Acc { return Acc(a.v * b.v, 0); }
// ties (and NaN vs NaN) go to the first index, like numpy's argmax
fn comb_max(a: Acc, b: Acc) -> Acc {
    if (better_max(b.v, a.v) || (!better_max(a.v, b.v) && b.i < a.i)) { return b; }
    return a;
}
fn comb_min(a: Acc, b: Acc) -> Acc {
    if (better_min(b.v, a.v) || (!better_min(a.v, b.v) && b.i < a.i)) { return b; }
    return a;
}

var<workgroup> sh_v: array<{{CT}}, WG>;
var<workgroup> sh_i: array<i32, WG>;

@compute @workgroup_size(WG)
fn reduce_wg(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) t: u32) {
    let o = wid.x + wid.y * nwg.x;
    let m = prm[0];
    let kk = prm[1];
    var acc = Acc({{IDENT}}, 0x7fffffff);
    if (o < m) {
        for (var k = t; k < kk; k = k + WG) {
            acc = comb_{{OP}}(acc, Acc(element(o, k), i32(k)));
        }
    }
    sh_v[t] = acc.v;
    sh_i[t] = acc.i;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s >> 1u) {
        if (t < s) {
            let r = comb_{{OP}}(Acc(sh_v[t], sh_i[t]), Acc(sh_v[t + s], sh_i[t + s]));
            sh_v[t] = r.v;
            sh_i[t] = r.i;
        }
        workgroupBarrier();
    }
    if (t == 0u && o < m) {
        let r = Acc(sh_v[0], sh_i[0]);
        out[o] = {{RESULT}};
    }
}

@compute @workgroup_size(WG)
fn reduce_lane(@builtin(global_invocation_id) gid: vec3<u32>,
               @builtin(num_workgroups) nwg: vec3<u32>) {
    let o = linear_id(gid, nwg, WG);
    if (o >= prm[0]) { return; }
    var r = Acc({{IDENT}}, 0x7fffffff);
    for (var k = 0u; k < prm[1]; k = k + 1u) {
        r = comb_{{OP}}(r, Acc(element(o, k), i32(k)));
    }
    out[o] = {{RESULT}};
}

//! subgroup
// Subgroup totals: sum and prod in the driver's own (fixed) order; max/min and the arg
// reductions are exact: the winning value, then the smallest index holding it (NaN wins).
fn sg_sum(a: Acc, sid: u32) -> Acc { return Acc(subgroupAdd(a.v), 0); }
fn sg_prod(a: Acc, sid: u32) -> Acc { return Acc(subgroupMul(a.v), 0); }
fn sg_pick(a: Acc, sid: u32, w: {{CT}}, nan: bool) -> Acc {
    let hit = select(a.v == w, is_nan_ct(a.v), nan);
    let i = subgroupMin(select(0x7fffffff, a.i, hit));
    // the value from the winning lane itself (subgroupMax is not defined on NaN)
    let lane = subgroupMin(select(0xffffffffu, sid, hit && a.i == i));
    return Acc(subgroupShuffle(a.v, lane), i);
}
fn sg_max(a: Acc, sid: u32) -> Acc {
    return sg_pick(a, sid, subgroupMax(a.v), subgroupAny(is_nan_ct(a.v)));
}
fn sg_min(a: Acc, sid: u32) -> Acc {
    return sg_pick(a, sid, subgroupMin(a.v), subgroupAny(is_nan_ct(a.v)));
}

@compute @workgroup_size(WG)
fn reduce_sg(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) t: u32,
             @builtin(subgroup_invocation_id) sid: u32, @builtin(subgroup_size) sgs: u32) {
    let o = wid.x + wid.y * nwg.x;
    let m = prm[0];
    let kk = prm[1];
    var acc = Acc({{IDENT}}, 0x7fffffff);
    if (o < m) {
        for (var k = t; k < kk; k = k + WG) {
            acc = comb_{{OP}}(acc, Acc(element(o, k), i32(k)));
        }
    }
    let part = sg_{{OP}}(acc, sid);
    // one slot per subgroup, at its first lane's index: right whichever lanes the driver
    // groups together; the other slots hold the identity
    sh_v[t] = select({{IDENT}}, part.v, sid == 0u);
    sh_i[t] = select(0x7fffffff, part.i, sid == 0u);
    workgroupBarrier();
    // the subgroup holding lane 0 combines the slots, each lane a fixed strided set of them
    if (subgroupAny(t == 0u)) {
        var r = Acc({{IDENT}}, 0x7fffffff);
        for (var j = sid; j < WG; j = j + sgs) {
            r = comb_{{OP}}(r, Acc(sh_v[j], sh_i[j]));
        }
        r = sg_{{OP}}(r, sid);
        if (t == 0u && o < m) {
            out[o] = {{RESULT}};
        }
    }
}

//! strided
@group(0) @binding(2) var<storage, read> src: array<{{CT}}>;

fn element(o: u32, k: u32) -> {{CT}} {
    let nk = prm[2];
    let nr = prm[3];
    let ks = 5u;
    let rs = 5u + 2u * nk;
    let off = bitcast<i32>(prm[4]) + strided_offset(o, nk, ks, ks + nk)
        + strided_offset(k, nr, rs, rs + nr);
    return src[u32(off)];
}
