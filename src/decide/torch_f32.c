/* torch_f32.c - torch 2.15 CPU float32 kernels used by laya's temperature fit, bit for
 * bit. See torch_f32.h for what was established and how. Compiled with -ffp-contract=off:
 * every fused multiply-add here is an explicit fmaf, every other operation rounds once. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "torch_f32.h"

static float f32_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
static uint32_t bits_f32(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* SLEEF xexpf: q = rint(d / ln 2), Cody-Waite reduction with ln 2 split as L2U + L2L, a
 * degree-6 polynomial by FMA, then u * 2^(q/2) * 2^(q - q/2). */
float sk_tf32_exp(float d) {
    float qf = rintf(d * 1.442695040888963407359924681001892137426645954152985934135449406931f);
    if (d < -104.0f) return 0.0f;
    if (d > 100.0f) return INFINITY;
    int q = (int)qf;
    float s = fmaf(qf, -0.693145751953125f, d);
    s = fmaf(qf, -1.428606765330187045e-06f, s);
    float u = 0.000198527617612853646278381f;
    u = fmaf(u, s, 0.00139304355252534151077271f);
    u = fmaf(u, s, 0.00833336077630519866943359f);
    u = fmaf(u, s, 0.0416664853692054748535156f);
    u = fmaf(u, s, 0.166666671633720397949219f);
    u = fmaf(u, s, 0.5f);
    u = 1.0f + fmaf(s * s, u, s);
    int h = q >> 1; /* arithmetic shift, as the SIMD code does */
    u = u * f32_bits((uint32_t)(h + 127) << 23);
    u = u * f32_bits((uint32_t)(q - h + 127) << 23);
    return u;
}

/* double-float helpers of SLEEF's logf_u1 (FMA variants) */
typedef struct { float x, y; } df;
static df df_add2_ff(float x, float y) {
    float s = x + y, v = s - x;
    return (df){s, (x - (s - v)) + (y - v)};
}
static df df_add_dd(df x, df y) {
    float s = x.x + y.x;
    return (df){s, (((x.x - s) + y.x) + x.y) + y.y};
}
static df df_add_df(df x, float y) {
    float s = x.x + y;
    return (df){s, ((x.x - s) + y) + x.y};
}
static df df_mul_df(df x, float y) {
    float s = x.x * y;
    return (df){s, fmaf(x.y, y, fmaf(x.x, y, -s))};
}
static df df_div(df n, df d) {
    float t = 1.0f / d.x, s = n.x * t;
    float u = fmaf(t, n.x, -s);
    float v = fmaf(-d.y, t, fmaf(-d.x, t, 1.0f));
    return (df){s, fmaf(s, v, fmaf(n.y, t, u))};
}

/* SLEEF xlogf_u1, AVX-512 form: e = getexp(d / 0.75), m = getmant(d) in [0.75, 1.5). */
float sk_tf32_log(float d) {
    if (!(d >= 1.17549435e-38f) || isinf(d)) return logf(d); /* not reached by the fit */
    float a = d * (1.0f / 0.75f);
    float e = (float)((int)((bits_f32(a) >> 23) & 0xff) - 127);
    float m = f32_bits((bits_f32(d) & 0x007fffffu) | 0x3f800000u);
    if (m >= 1.5f) m *= 0.5f;
    df s = df_mul_df((df){0.69314718246459960938f, -1.904654323148236017e-09f}, e);
    df x = df_div(df_add2_ff(-1.0f, m), df_add2_ff(1.0f, m));
    float x2 = x.x * x.x;
    float t = 0.3027294874e+0f;
    t = fmaf(t, x2, 0.3996108174e+0f);
    t = fmaf(t, x2, 0.6666694880e+0f);
    s = df_add_dd(s, (df){x.x * 2.0f, x.y * 2.0f});
    s = df_add_df(s, (x2 * x.x) * t);
    return s.x + s.y;
}

/* at::native multi_row_sum: `size` rows of `lanes` accumulators, element (i, l) at
 * v[i * lanes + l], summed through 4 cascade levels of 2^max(4, ceil(log2 size) / 4) rows. */
enum { CASCADE_LEVELS = 4, SUM_VEC = 8, SUM_ILP = 4, MAX_LANES = SUM_VEC * SUM_ILP };
static void multi_row_sum(const float *v, size_t lanes, size_t size, float *out) {
    size_t ceil_log2 = 0;
    while (((size_t)1 << ceil_log2) < size) ceil_log2++;
    size_t power = ceil_log2 / CASCADE_LEVELS;
    if (power < 4) power = 4;
    const size_t step = (size_t)1 << power, mask = step - 1;
    float acc[CASCADE_LEVELS][MAX_LANES];
    memset(acc, 0, sizeof acc);
    size_t i = 0;
    while (i + step <= size) {
        for (size_t j = 0; j < step; j++, i++)
            for (size_t l = 0; l < lanes; l++) acc[0][l] += v[i * lanes + l];
        for (size_t j = 1; j < CASCADE_LEVELS; j++) {
            for (size_t l = 0; l < lanes; l++) {
                acc[j][l] += acc[j - 1][l];
                acc[j - 1][l] = 0.0f;
            }
            if ((i & (mask << (j * power))) != 0) break;
        }
    }
    for (; i < size; i++)
        for (size_t l = 0; l < lanes; l++) acc[0][l] += v[i * lanes + l];
    for (size_t j = 1; j < CASCADE_LEVELS; j++)
        for (size_t l = 0; l < lanes; l++) acc[0][l] += acc[j][l];
    memcpy(out, acc[0], lanes * sizeof *out);
}

/* cascade_sum: vectorized_inner_sum for n >= 8 (row_sum over vectors, ILP 4), else
 * scalar row_sum (ILP 4). */
float sk_tf32_sum(const float *v, size_t n) {
    float p[MAX_LANES];
    if (n < SUM_VEC) {
        size_t rows = n / SUM_ILP;
        multi_row_sum(v, SUM_ILP, rows, p);
        for (size_t i = rows * SUM_ILP; i < n; i++) p[0] += v[i];
        for (size_t k = 1; k < SUM_ILP; k++) p[0] += p[k];
        return p[0];
    }
    size_t nvec = n / SUM_VEC, rows = nvec / SUM_ILP;
    multi_row_sum(v, SUM_VEC * SUM_ILP, rows, p);
    for (size_t i = rows * SUM_ILP; i < nvec; i++)
        for (size_t l = 0; l < SUM_VEC; l++) p[l] += v[i * SUM_VEC + l];
    for (size_t k = 1; k < SUM_ILP; k++)
        for (size_t l = 0; l < SUM_VEC; l++) p[l] += p[k * SUM_VEC + l];
    float total = 0.0f;
    for (size_t k = nvec * SUM_VEC; k < n; k++) total += v[k];
    for (size_t l = 0; l < SUM_VEC; l++) total += p[l];
    return total;
}

/* vec::map_reduce_all / reduce_all with x + y on AVX-512 vectors of 16, after the map:
 * under 16 values left to right; else lane-wise over whole vectors, the partial tail into
 * its lanes, then the shuffle tree (lanes 8 apart, 4, 2, 1). */
enum { SOFTMAX_VEC = 16 };
static float vec16_reduce_sum(const float *v, size_t n) {
    if (n < SOFTMAX_VEC) {
        float acc = v[0];
        for (size_t i = 1; i < n; i++) acc = acc + v[i];
        return acc;
    }
    float acc[SOFTMAX_VEC], nxt[SOFTMAX_VEC];
    memcpy(acc, v, sizeof acc);
    size_t d = SOFTMAX_VEC;
    for (; d < n - (n % SOFTMAX_VEC); d += SOFTMAX_VEC)
        for (size_t l = 0; l < SOFTMAX_VEC; l++) acc[l] = acc[l] + v[d + l];
    for (size_t l = 0; d + l < n; l++) acc[l] = acc[l] + v[d + l];
    for (size_t span = SOFTMAX_VEC / 2; span >= 1; span /= 2) {
        for (size_t l = 0; l < SOFTMAX_VEC; l++) nxt[l] = acc[l] + acc[l ^ span];
        memcpy(acc, nxt, sizeof acc);
    }
    return acc[0];
}

float sk_tf32_row_reduce_sum(const float *g, size_t w) { return vec16_reduce_sum(g, w); }

void sk_tf32_log_softmax_row(const float *u, size_t w, float *out) {
    float mx = u[0];
    for (size_t j = 1; j < w; j++)
        if (u[j] > mx) mx = u[j];
    for (size_t j = 0; j < w; j++) out[j] = sk_tf32_exp(u[j] - mx);
    float lse = sk_tf32_log(vec16_reduce_sum(out, w));
    for (size_t j = 0; j < w; j++) out[j] = (u[j] - mx) - lse;
}

/* torch.exp on a float32 tensor is MKL's vsExp (HA). Its algorithm is not published; this
 * is a model of it fitted to its outputs (tools/golden/fit_mkl_exp_model.py):
 * k = floor(x * 32 / ln 2), r = x - k ln2/32 (Cody-Waite, two FMAs), j = k mod 32,
 * p = r + r^2 (c2 + c3 r) with fitted float coefficients, T = float(2^(j/32)) and d its
 * residual relative to T, result 2^(k div 32) * (T + T (p + d)) in one FMA. It agrees with
 * torch.exp on all but ~5e-5 of float32 arguments in [-16, 16] (the correctly rounded exp:
 * 1.1 %). */
float sk_tf32_mkl_exp(float x) {
    if (!(x > -87.0f && x < 88.0f)) return expf(x); /* not reached by the fit's band */
    const double ln2 = 0.693147180559945309417232121458176568;
    const float inv_step = (float)(32.0 / ln2), step_hi = (float)(ln2 / 32.0);
    const float step_lo = (float)(ln2 / 32.0 - (double)step_hi);
    float k = (float)floor((double)x * (double)inv_step);
    float r = fmaf(-k, step_hi, x);
    r = fmaf(-k, step_lo, r);
    int ki = (int)k, j = ki & 31, m = (ki - j) / 32;
    double table = exp2((double)j / 32.0);
    float t_hi = (float)table;
    float t_rel = (float)((double)(float)(table - (double)t_hi) / (double)t_hi);
    float p = fmaf(r * r, fmaf(0.166671574f, r, 0.500014663f), r);
    float res = fmaf(t_hi, p + t_rel, t_hi);
    return (float)ldexp((double)res, m);
}
