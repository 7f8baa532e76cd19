// Neural-network kernels (float32; the backend widens float16 first): direct kernels for
// depthwise (few channels per group) convolutions (the others are conv_igemm.wgsl), pooling
// windows, row-wise softmax / log-softmax and layer norm. One lane per output element (or
// row): no workgroup memory and no barriers, which lavapipe punishes (softmax_sg, for GPUs
// with subgroups, is one subgroup per row).
// Inputs are strided views (offset and strides in elements live in `prm`), so transposed or
// sliced inputs need no copy. Each section lists its own meta layout.

@group(0) @binding(0) var<storage, read> prm: array<u32>;

const WG: u32 = {{WG}}u;

{{LIBS}}

fn si(j: u32) -> i32 { return bitcast<i32>(prm[j]); }

//! pool
// Max (-inf padding, NaN propagates) or average (PyTorch's divisors: windows clipped to the
// padded input; padding counted when include_pad; div_override replaces them) over windows.
// meta: [total, C, P, nd, x_off, sN, sC, include_pad, div_override,
//        per spatial dim d: in_size, out_size, kernel, stride, pad, dilation, x_stride]
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg, WG);
    if (i >= prm[0]) { return; }
    let cc = prm[1];
    let pp = prm[2];
    let nd = prm[3];
    let p = i % pp;
    let c = (i / pp) % cc;
    let n = i / (pp * cc);
    let base = si(4) + i32(n) * si(5) + i32(c) * si(6);
    var taps = 1u;
    var div = 1;
    var pos = p;
    for (var d = i32(nd) - 1; d >= 0; d = d - 1) {
        let b = 9u + u32(d) * 7u;
        taps = taps * prm[b + 2u];
        let o = i32(pos % prm[b + 1u]);
        pos = pos / prm[b + 1u];
        let start = o * si(b + 3u) - si(b + 4u);
        let end = min(start + si(b + 2u), si(b) + si(b + 4u));
        if (prm[7] == 1u) {
            div = div * (end - start);
        } else {
            div = div * (min(end, si(b)) - max(start, 0));
        }
    }
    var acc = {{INIT}};
    for (var t = 0u; t < taps; t = t + 1u) {
        var tap = t;
        var pos2 = p;
        var off = base;
        var inside = true;
        for (var d = i32(nd) - 1; d >= 0; d = d - 1) {
            let b = 9u + u32(d) * 7u;
            let k = tap % prm[b + 2u];
            tap = tap / prm[b + 2u];
            let o = pos2 % prm[b + 1u];
            pos2 = pos2 / prm[b + 1u];
            let coord = i32(o * prm[b + 3u] + k * prm[b + 5u]) - si(b + 4u);
            inside = inside && coord >= 0 && coord < si(b);
            off = off + coord * si(b + 6u);
        }
        if (inside) {
            let v = src[u32(off)];
            {{ACCUMULATE}}
        }
    }
    if (prm[8] != 0u) { div = si(8); }
    out[i] = {{FINISH}};
}

//! softmax
// One lane per row along `dim` (moved last in the output): max, sum of exp, then write.
// meta: [rows, length, nd, x_off, x_stride_dim, outer_shape[nd], outer_strides[nd]]
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let r = linear_id(gid, nwg, WG);
    if (r >= prm[0]) { return; }
    let len = prm[1];
    let nd = prm[2];
    let st = si(4);
    let base = si(3) + strided_offset(r, nd, 5u, 5u + nd);
    var m = -inf_f();
    var nan = false;
    for (var j = 0u; j < len; j = j + 1u) {
        let v = src[u32(base + i32(j) * st)];
        nan = nan || is_nan_f(v);
        m = max(m, v);
    }
    var s = 0.0;
    for (var j = 0u; j < len; j = j + 1u) {
        s = s + f_exp(src[u32(base + i32(j) * st)] - m);
    }
    let o = r * len;
    for (var j = 0u; j < len; j = j + 1u) {
        let shifted = src[u32(base + i32(j) * st)] - m;
        var y = {{RESULT}};
        if (nan) { y = nan_f(); }
        out[o + j] = y;
    }
}

//! softmax_sg
// Softmax with the "subgroup" feature, for long rows: one subgroup per row, its lanes strided
// along it, max and sum combined with subgroup operations (one barrier: the row counter).
// The subgroups of a workgroup take its RPW rows from a counter (set here: this build does
// not zero workgroup memory), so which lanes form a
// subgroup does not matter; a row's result depends only on its subgroup's lane count.
// meta: as `softmax`.
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

const RPW: u32 = {{RPW}}u;
var<workgroup> taken: atomic<u32>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
    if (t == 0u) { atomicStore(&taken, 0u); }
    workgroupBarrier();
    let rank = subgroupExclusiveAdd(1u);
    let lanes = subgroupAdd(1u);
    let first = (wid.x + wid.y * nwg.x) * RPW;
    let len = prm[1];
    let nd = prm[2];
    let st = si(4);
    loop {
        var slot = 0u;
        if (rank == 0u) { slot = atomicAdd(&taken, 1u); }
        slot = subgroupMax(slot);
        let r = first + slot;
        if (slot >= RPW || r >= prm[0]) { break; }
        let base = si(3) + strided_offset(r, nd, 5u, 5u + nd);
        var m = -inf_f();
        var nan = false;
        // a counter uniform across the subgroup, the lane's element at its rank
        for (var b = 0u; b < len; b = b + lanes) {
            let j = min(b + rank, len - 1u);  // past the end: the last element again
            let v = src[u32(base + i32(j) * st)];
            nan = nan || is_nan_f(v);
            m = max(m, v);
        }
        m = subgroupMax(m);
        nan = subgroupAny(nan);
        var s = 0.0;
        for (var b = 0u; b < len; b = b + lanes) {
            let j = b + rank;
            if (j < len) { s = s + f_exp(src[u32(base + i32(j) * st)] - m); }
        }
        s = subgroupAdd(s);
        let o = r * len;
        for (var b = 0u; b < len; b = b + lanes) {
            let j = b + rank;
            if (j >= len) { break; }
            let shifted = src[u32(base + i32(j) * st)] - m;
            var y = {{RESULT}};
            if (nan) { y = nan_f(); }
            out[o + j] = y;
        }
    }
}

//! layer_norm
// One lane per row of a contiguous (rows, D) input; two passes (mean, then the biased variance
// of the centred values) like the composite's float_var.
// meta: [rows, D, has_weight, has_bias, eps (f32 bits)]
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read> weight: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let r = linear_id(gid, nwg, WG);
    if (r >= prm[0]) { return; }
    let dd = prm[1];
    let o = r * dd;
    var s = 0.0;
    for (var j = 0u; j < dd; j = j + 1u) { s = s + src[o + j]; }
    let mean = s / f32(dd);
    var q = 0.0;
    for (var j = 0u; j < dd; j = j + 1u) {
        let c = src[o + j] - mean;
        q = q + c * c;
    }
    let inv = 1.0 / sqrt(q / f32(dd) + bitcast<f32>(prm[4]));
    for (var j = 0u; j < dd; j = j + 1u) {
        var y = (src[o + j] - mean) * inv;
        if (prm[2] == 1u) { y = y * weight[j]; }
        if (prm[3] == 1u) { y = y + bias[j]; }
        out[o + j] = y;
    }
}

//! conv_direct
// A grouped convolution with few input channels per group (depthwise: cg = 1), computed
// directly: each output element (n, co, *pos) loops over its group's cg channels and the kernel
// taps; out-of-bounds taps are the zero padding. The weight is contiguous (C_out, cg, *kernel);
// the output contiguous (N, C_out, *out).
// meta: [total, C_out, P, taps, cog, cg, nd, x_off, sN, sC, has_bias,
//        per spatial dim d: in_size, out_size, kernel, stride, dilation, pad_before, x_stride]
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read> weight: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg, WG);
    if (i >= prm[0]) { return; }
    let cout = prm[1];
    let pp = prm[2];
    let taps = prm[3];
    let cg = prm[5];
    let nd = prm[6];
    let p = i % pp;
    let co = (i / pp) % cout;
    let n = i / (pp * cout);
    let c0 = (co / prm[4]) * cg;
    let base = si(7) + i32(n) * si(8);
    var acc = 0.0;
    for (var t = 0u; t < taps; t = t + 1u) {
        var tap = t;
        var pos = p;
        var off = base;
        var inside = true;
        for (var d = i32(nd) - 1; d >= 0; d = d - 1) {
            let b = 11u + u32(d) * 7u;
            let k = tap % prm[b + 2u];
            tap = tap / prm[b + 2u];
            let o = pos % prm[b + 1u];
            pos = pos / prm[b + 1u];
            let coord = i32(o * prm[b + 3u] + k * prm[b + 4u]) - si(b + 5u);
            inside = inside && coord >= 0 && coord < si(b);
            off = off + coord * si(b + 6u);
        }
        if (inside) {
            for (var j = 0u; j < cg; j = j + 1u) {
                let v = src[u32(off + i32(c0 + j) * si(9))];
                acc = acc + v * weight[(co * cg + j) * taps + t];
            }
        }
    }
    if (prm[10] == 1u) { acc = acc + bias[co]; }
    out[i] = acc;
}

//! conv_transpose_direct
// A grouped transposed convolution with few input channels per group (the adjoint of a
// depthwise conv: cig = channel multiplier, cog = 1), computed directly: each output element
// (n, co, *pos) sums x[n, ci, q] * w[ci, co % cog, k] over its group's channels ci and the taps
// k whose input position q = (pos + pad - k·dil) / stride is exact and inside the input.
// The weight is contiguous (C_in, cog, *kernel); the output contiguous (N, C_out, *out).
// meta: [total, C_out, P_out, taps, cog, cig, nd, x_off, sN, sC, has_bias,
//        per spatial dim d: in_size, out_size, kernel, stride, dilation, pad, x_stride]
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read> weight: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg, WG);
    if (i >= prm[0]) { return; }
    let cout = prm[1];
    let pp = prm[2];
    let taps = prm[3];
    let cog = prm[4];
    let cig = prm[5];
    let nd = prm[6];
    let p = i % pp;
    let co = (i / pp) % cout;
    let n = i / (pp * cout);
    let ci0 = (co / cog) * cig;
    let col = co % cog;
    let base = si(7) + i32(n) * si(8);
    var acc = 0.0;
    for (var t = 0u; t < taps; t = t + 1u) {
        var tap = t;
        var pos = p;
        var off = base;
        var ok = true;
        for (var d = i32(nd) - 1; d >= 0; d = d - 1) {
            let b = 11u + u32(d) * 7u;
            let k = tap % prm[b + 2u];
            tap = tap / prm[b + 2u];
            let o = pos % prm[b + 1u];
            pos = pos / prm[b + 1u];
            let num = i32(o) + si(b + 5u) - i32(k * prm[b + 4u]);
            let st = si(b + 3u);
            let j = num / st;
            ok = ok && num >= 0 && j * st == num && j < si(b);
            off = off + j * si(b + 6u);
        }
        if (ok) {
            for (var c = 0u; c < cig; c = c + 1u) {
                let ci = ci0 + c;
                acc = acc + src[u32(off + i32(ci) * si(9))] * weight[(ci * cog + col) * taps + t];
            }
        }
    }
    if (prm[10] == 1u) { acc = acc + bias[co]; }
    out[i] = acc;
}

//! conv_weight_grad_direct
// The weight gradient of a grouped convolution with few input channels per group, one lane per
// weight element (co, j, *k): the sum over samples and output positions of
// grad[n, co, pos] * x[n, g·cg + j, pos·stride + k·dil - pad] (zero outside the input).
// grad is contiguous (N, C_out, *out); the result contiguous (C_out, cg, *kernel).
// meta: [total, N, C_out, P, taps, cog, cg, nd, x_off, sN, sC,
//        per spatial dim d: in_size, out_size, kernel, stride, dilation, pad_before, x_stride]
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read> grad: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg, WG);
    if (i >= prm[0]) { return; }
    let nn = prm[1];
    let cout = prm[2];
    let pp = prm[3];
    let taps = prm[4];
    let cg = prm[6];
    let nd = prm[7];
    let t = i % taps;
    let j = (i / taps) % cg;
    let co = i / (taps * cg);
    let c = (co / prm[5]) * cg + j;
    var acc = 0.0;
    for (var p = 0u; p < pp; p = p + 1u) {
        var tap = t;
        var pos = p;
        var off = si(8) + i32(c) * si(10);
        var inside = true;
        for (var d = i32(nd) - 1; d >= 0; d = d - 1) {
            let b = 11u + u32(d) * 7u;
            let k = tap % prm[b + 2u];
            tap = tap / prm[b + 2u];
            let o = pos % prm[b + 1u];
            pos = pos / prm[b + 1u];
            let coord = i32(o * prm[b + 3u] + k * prm[b + 4u]) - si(b + 5u);
            inside = inside && coord >= 0 && coord < si(b);
            off = off + coord * si(b + 6u);
        }
        if (inside) {
            for (var n = 0u; n < nn; n = n + 1u) {
                acc = acc + grad[(n * cout + co) * pp + p] * src[u32(off + i32(n) * si(9))];
            }
        }
    }
    out[i] = acc;
}
