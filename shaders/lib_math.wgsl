// Math helpers shared by the elementwise kernels. WGSL builtins leave NaN/inf and domain
// errors implementation-defined (and drivers may compile `x != x` away), so NaN is tested on
// the bit pattern and the IEEE/C results numpy gives are spelled out explicitly.

fn is_nan_f(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
fn is_inf_f(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u; }
// a var, not a constant: Tint (Chromium) rejects const-expressions that evaluate to NaN/inf
fn nan_f() -> f32 { var bits = 0x7fc00000u; return bitcast<f32>(bits); }
fn inf_f() -> f32 { var bits = 0x7f800000u; return bitcast<f32>(bits); }

fn f_max(a: f32, b: f32) -> f32 {
    if (is_nan_f(a) || is_nan_f(b)) { return nan_f(); }
    return max(a, b);
}

fn f_min(a: f32, b: f32) -> f32 {
    if (is_nan_f(a) || is_nan_f(b)) { return nan_f(); }
    return min(a, b);
}

fn f_exp(x: f32) -> f32 {
    if (is_nan_f(x)) { return x; }
    if (x > 88.72284) { return inf_f(); }
    if (x < -103.97208) { return 0.0; }
    return exp(x);
}

fn f_log(x: f32) -> f32 {
    if (is_nan_f(x) || x < 0.0) { return nan_f(); }
    if (x == 0.0) { return -inf_f(); }
    if (is_inf_f(x)) { return x; }
    return log(x);
}

fn f_sqrt(x: f32) -> f32 {
    if (is_nan_f(x) || x < 0.0) { return nan_f(); }
    if (is_inf_f(x)) { return x; }
    return sqrt(x);
}

// sin/cos of f32: the builtins are only accurate near [-pi, pi] (SwiftShader ~1e-4, NVIDIA
// 7e-6 at x = 100), so reduce by k = round(x·2/pi) with Cody-Waite: pi/2 = P1 + P2 + P3 + P4,
// P1..P3 of 8 significant bits so k·Pi is exact for k < 2^16 (|x| <= 1e5), then the cephes
// sinf/cosf polynomials on [-pi/4, pi/4] (~1 ulp) and the quadrant k mod 4 picks sin or cos.
// Beyond 1e5 (k·P1 no longer exact) the builtins take over.
struct TrigRed { r: f32, q: u32 }

fn trig_reduce(x: f32) -> TrigRed {
    let k = round(x * 0.63661975);
    let a = x - k * 1.5703125;
    let b = a - k * 4.825592041015625e-4;
    let c = b - k * 1.2665987014770508e-6;
    let r = c - k * 9.920936e-10;
    // k mod 4 from the float (exact: k is an integer below 2^16)
    let q = u32(k - 4.0 * floor(k * 0.25));
    return TrigRed(r, q);
}

fn sin_poly(r: f32) -> f32 {
    let z = r * r;
    let p = (-1.9515295891e-4 * z + 8.3321608736e-3) * z - 1.6666654611e-1;
    return r + r * z * p;
}

fn cos_poly(r: f32) -> f32 {
    let z = r * r;
    let p = (2.443315711809948e-5 * z - 1.388731625493765e-3) * z + 4.166664568298827e-2;
    return 1.0 - 0.5 * z + z * z * p;
}

fn f_sin(x: f32) -> f32 {
    if (is_nan_f(x) || is_inf_f(x)) { return nan_f(); }
    if (abs(x) > 1e5) { return sin(x); }
    // sin(x) rounds to x here; also keeps the sign of -0.0, which the reduction loses
    if (abs(x) < 1e-4) { return x; }
    let t = trig_reduce(x);
    var v: f32;
    if ((t.q & 1u) == 0u) { v = sin_poly(t.r); } else { v = cos_poly(t.r); }
    if (t.q >= 2u) { v = -v; }
    return v;
}

fn f_cos(x: f32) -> f32 {
    if (is_nan_f(x) || is_inf_f(x)) { return nan_f(); }
    if (abs(x) > 1e5) { return cos(x); }
    let t = trig_reduce(x);
    var v: f32;
    if ((t.q & 1u) == 0u) { v = cos_poly(t.r); } else { v = sin_poly(t.r); }
    if (t.q == 1u || t.q == 2u) { v = -v; }
    return v;
}

fn f_atan(x: f32) -> f32 {
    if (is_nan_f(x)) { return x; }
    if (is_inf_f(x)) { return sign(x) * 1.5707963267948966; }
    return atan(x);
}

fn f_tanh(x: f32) -> f32 {
    if (is_nan_f(x)) { return x; }
    // tanh(±9) is ±1 in f32; clamping keeps exp-based implementations from inf/inf
    return tanh(clamp(x, -9.0, 9.0));
}

fn f_floor(x: f32) -> f32 { if (is_nan_f(x)) { return x; } return floor(x); }
fn f_ceil(x: f32) -> f32 { if (is_nan_f(x)) { return x; } return ceil(x); }
// WGSL round() is round-half-to-even, like numpy
fn f_round(x: f32) -> f32 { if (is_nan_f(x)) { return x; } return round(x); }

// erf for f32: the rational approximation Eigen/XLA use (a few ulp on [-4, 4], ±1 beyond)
fn f_erf(x_in: f32) -> f32 {
    if (is_nan_f(x_in)) { return x_in; }
    let x = clamp(x_in, -4.0, 4.0);
    let x2 = x * x;
    var p = x2 * -2.72614225801306e-10 + 2.77068142495902e-08;
    p = p * x2 + -2.10102402082508e-06;
    p = p * x2 + -5.69250639462346e-05;
    p = p * x2 + -7.34990630326855e-04;
    p = p * x2 + -2.95459980854025e-03;
    p = p * x2 + -1.60960333262415e-02;
    p = p * x;
    var q = x2 * -1.45660718464996e-05 + -2.13374055278905e-04;
    q = q * x2 + -1.68282697438203e-03;
    q = q * x2 + -7.37332916720468e-03;
    q = q * x2 + -1.42647390514189e-02;
    return p / q;
}

// C pow(): exact by repeated squaring for small integer exponents (x**2 is exact), negative
// bases allowed for integer exponents, NaN for a negative base and a fractional exponent.
fn f_pow(a: f32, b: f32) -> f32 {
    if (b == 0.0 || a == 1.0) { return 1.0; }
    if (is_nan_f(a) || is_nan_f(b)) { return nan_f(); }
    let aa = abs(a);
    if (is_inf_f(b)) {
        if (aa == 1.0) { return 1.0; }
        if ((aa > 1.0) == (b > 0.0)) { return inf_f(); }
        return 0.0;
    }
    let b_int = floor(b) == b;
    let neg = (bitcast<u32>(a) >> 31u) == 1u;  // sign bit: -0.0 and -inf count as negative
    if (neg && !b_int && aa != 0.0 && !is_inf_f(aa)) { return nan_f(); }
    let odd = b_int && abs(b) < 16777216.0 && fract(b * 0.5) != 0.0;
    var r: f32;
    if (aa == 0.0) {
        r = select(inf_f(), 0.0, b > 0.0);
    } else if (is_inf_f(aa)) {
        r = select(0.0, inf_f(), b > 0.0);
    } else if (b_int && abs(b) <= 64.0) {
        r = 1.0;
        var base = aa;
        var e = u32(abs(b));
        loop {
            if (e == 0u) { break; }
            if ((e & 1u) == 1u) { r = r * base; }
            base = base * base;
            e = e >> 1u;
        }
        if (b < 0.0) { r = 1.0 / r; }
    } else {
        r = exp2(b * log2(aa));
    }
    if (neg && odd) { return -r; }
    return r;
}

// Integer division and remainder with Python semantics; x // 0 and x % 0 are 0 like numpy.
fn i_floordiv(a: i32, b: i32) -> i32 {
    if (b == 0) { return 0; }
    if (b == -1) { return 0 - a; }
    let q = a / b;
    let r = a - q * b;
    if (r != 0 && ((r < 0) != (b < 0))) { return q - 1; }
    return q;
}

fn i_rem(a: i32, b: i32) -> i32 {
    if (b == 0 || b == -1) { return 0; }
    // a - (a / b) * b rather than `%`: NVIDIA's Vulkan driver gave divisor-signed results for
    // `%` on negative i32 (seen on an H200), while signed `/` truncates everywhere
    let r = a - (a / b) * b;
    if (r != 0 && ((r < 0) != (b < 0))) { return r + b; }
    return r;
}

fn i_pow(a: i32, b: i32) -> i32 {
    var r = 1;
    var base = a;
    var e = u32(max(b, 0));
    loop {
        if (e == 0u) { break; }
        if ((e & 1u) == 1u) { r = r * base; }
        base = base * base;
        e = e >> 1u;
    }
    return r;
}

fn f_to_bool(x: f32) -> bool { return x != 0.0 || is_nan_f(x); }
