// Copy a strided view into a strided region of another buffer (cat, slice_assign); 32-bit
// element types only (packed dtypes are widened first).
// meta: [n, nd, shape[nd], src_offset, src_strides[nd], dst_offset, dst_strides[nd]]

@group(0) @binding(0) var<storage, read> prm: array<u32>;
@group(0) @binding(1) var<storage, read> src: array<{{ST}}>;
@group(0) @binding(2) var<storage, read_write> dst: array<{{ST}}>;

const WG: u32 = {{WG}}u;

{{LIBS}}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg, WG);
    if (i >= prm[0]) { return; }
    let nd = prm[1];
    let s = bitcast<i32>(prm[2u + nd]) + strided_offset(i, nd, 2u, 3u + nd);
    let d = bitcast<i32>(prm[3u + 2u * nd]) + strided_offset(i, nd, 2u, 4u + 2u * nd);
    dst[u32(d)] = src[u32(s)];
}
