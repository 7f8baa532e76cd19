// Body for `map.wgsl`: an expression over inputs x0, x1, x2 (loaded at their strided offsets).
fn compute(i: u32) -> {{OUT_CT}} {
{{LOADS}}
    return {{EXPR}};
}
