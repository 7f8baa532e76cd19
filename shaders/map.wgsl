// One output element per lane, `PACK` elements (one u32 word of the output) per thread, so
// packed outputs (float16, int8, uint8, bool) are written a whole word at a time.
//
// meta: [n, nd, shape[nd], then per input k: offset, contiguous flag, strides[nd], then the
//        kernel's own parameters (see `param`)]
// The body (`compute`) comes from the op: an expression over loads, gather, scatter, ...

@group(0) @binding(0) var<storage, read> prm: array<u32>;
{{BINDINGS}}

const WG: u32 = {{WG}}u;
const PACK: u32 = {{PACK}}u;
const NIN: u32 = {{NIN}}u;

{{LIBS}}

{{BODY}}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = linear_id(gid, nwg, WG);
    let n = prm[0];
    if (w >= (n + PACK - 1u) / PACK) { return; }
    var v: array<{{OUT_CT}}, {{PACK}}>;
    for (var j = 0u; j < PACK; j = j + 1u) {
        let i = w * PACK + j;
        if (i < n) { v[j] = compute(i); }
    }
    out[w] = store_out(v);
}
