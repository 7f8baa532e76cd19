// Cumulative sum/product along the last dim of a view: one lane per line (sequential, like
// numpy's cumsum, so float rounding matches a left-to-right sum).
// meta: [lines, len, nd_outer, offset, stride_dim, outer_shape[nd], outer_strides[nd]]

@group(0) @binding(0) var<storage, read> prm: array<u32>;
@group(0) @binding(1) var<storage, read> src: array<{{CT}}>;
@group(0) @binding(2) var<storage, read_write> out: array<{{CT}}>;

const WG: u32 = {{WG}}u;

{{LIBS}}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let line = linear_id(gid, nwg, WG);
    if (line >= prm[0]) { return; }
    let len = prm[1];
    let nd = prm[2];
    let base = bitcast<i32>(prm[3]) + strided_offset(line, nd, 5u, 5u + nd);
    let stride = bitcast<i32>(prm[4]);
    var acc: {{CT}} = {{IDENT}};
    for (var j = 0u; j < len; j = j + 1u) {
        acc = acc {{OPERATOR}} src[u32(base + i32(j) * stride)];
        out[line * len + j] = acc;
    }
}
