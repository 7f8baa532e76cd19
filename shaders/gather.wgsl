// Body for `map.wgsl` (torch.gather). Input 0 is x viewed with the index's shape and a zero
// stride along `dim`; input 1 is the index. param(0) is x's stride along dim.
fn compute(i: u32) -> {{OUT_CT}} {
    let idx = load_in1(in_offset(i, 1u));
    return load_in0(u32(i32(in_offset(i, 0u)) + idx * bitcast<i32>(param(0u))));
}
