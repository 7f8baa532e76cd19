// The dense fast path of `map.wgsl`: every input is either dense in the output's row-major
// order (same shape, stride 1 after collapsing) or one broadcast value, so a lane handles 4
// consecutive elements with no index arithmetic, and 32-bit operands whose offset is a
// multiple of 4 move as one vec4 load / store (what memory bandwidth needs on a GPU).
//
// meta: [n, then per input k: its offset (in vec4s for vec4 inputs, else in elements)]
// Lanes past `n` in the last group of 4 compute on whatever lies there and write it into the
// padding of the output block (blocks are whole multiples of 256 bytes; see launch.map_op).

@group(0) @binding(0) var<storage, read> prm: array<u32>;
{{BINDINGS}}

const WG: u32 = {{WG}}u;

{{LIBS}}

fn compute({{ARGS}}) -> {{OUT_CT}} {
    return {{EXPR}};
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = linear_id(gid, nwg, WG);
    let i = w * 4u;
    if (i >= prm[0]) { return; }
{{LOADS}}
{{STORE}}
}
