/*
 * outliers.c - int8 that keeps its accuracy (docs/quantization.md §3): outlier input channels of a
 * matrix product picked from calibrated magnitudes, and Q8_0 scales chosen so that those
 * columns' weights are (near) exact multiples of the block scale. The result is still
 * standard Q8_0 bytes; the model additionally computes the outlier columns in f32 with the
 * exact weights (src/kernels/q8.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "quant.h"

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

typedef struct chan {
    float mag;
    uint32_t idx;
} chan;

static int cmp_chan_desc(const void *a, const void *b) {
    const chan *x = a, *y = b;
    if (x->mag != y->mag) return x->mag < y->mag ? 1 : -1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

size_t sk_quant_pick_outliers(const float *chan_max, size_t k, float ratio, uint32_t *idx) {
    const size_t cap = k / 16;
    if (cap == 0) return 0;
    float *s = malloc(k * sizeof(float));
    chan *c = malloc(k * sizeof(chan));
    size_t n = 0;
    if (s && c) {
        memcpy(s, chan_max, k * sizeof(float));
        qsort(s, k, sizeof(float), cmp_float);
        const float median = s[k / 2], thr = ratio * median;
        for (size_t i = 0; i < k; i++)
            if (isfinite(chan_max[i]) && chan_max[i] > thr && chan_max[i] > 0.0f)
                c[n++] = (chan){chan_max[i], (uint32_t)i};
        qsort(c, n, sizeof(chan), cmp_chan_desc);
        if (n > cap) n = cap;
        for (size_t i = 0; i < n; i++) idx[i] = c[i].idx;
        qsort(idx, n, sizeof(uint32_t), cmp_u32);
    }
    free(s);
    free(c);
    return n;
}

static int8_t qround(float v) {
    if (!(v == v)) return 0;
    v = roundf(v);
    if (v > 127.0f) return 127;
    if (v < -128.0f) return -128;
    return (int8_t)(int)v;
}

/* Weighted squared error of block x under the f16 scale bits dh (quants round(x / d)). */
static double block_err(const float *x, const uint8_t *isout, uint16_t dh, int8_t *q) {
    const float d = sk_f16_to_f32(dh), id = d != 0.0f ? 1.0f / d : 0.0f;
    double err = 0.0;
    for (int j = 0; j < SK_QK8_0; j++) {
        q[j] = qround(x[j] * id);
        const double diff = (double)x[j] - (double)d * q[j];
        err += (isout && isout[j] ? (double)SK_OUTLIER_WEIGHT : 1.0) * diff * diff;
    }
    return err;
}

void sk_quantize_q8_0_exact_cols(const float *x, const uint8_t *is_outlier, uint8_t *out,
                                 size_t n) {
    const size_t nb = n / SK_QK8_0;
    for (size_t b = 0; b < nb; b++) {
        const float *xb = x + b * SK_QK8_0;
        const uint8_t *ob_out = is_outlier ? is_outlier + b * SK_QK8_0 : NULL;
        uint8_t *ob = out + b * SK_Q8_0_BLOCK_BYTES;
        sk_quantize_q8_0(xb, ob, SK_QK8_0);  /* ggml's choice: always a candidate */
        int any = 0;
        float amax = 0.0f;
        for (int j = 0; j < SK_QK8_0; j++) {
            if (ob_out && ob_out[j] && xb[j] != 0.0f) any = 1;
            if (fabsf(xb[j]) > amax) amax = fabsf(xb[j]);
        }
        if (!any || !isfinite(amax) || amax == 0.0f) continue;
        /* ggml's bytes, scored */
        double best;
        {
            const float d = sk_f16_to_f32((uint16_t)(ob[0] | (ob[1] << 8)));
            best = 0.0;
            for (int j = 0; j < SK_QK8_0; j++) {
                const double diff = (double)xb[j] - (double)d * (int8_t)ob[2 + j];
                best += (ob_out[j] ? (double)SK_OUTLIER_WEIGHT : 1.0) * diff * diff;
            }
        }
        int8_t q[SK_QK8_0], bestq[SK_QK8_0];
        uint16_t bestd = 0;
        int found = 0;
        for (int j = 0; j < SK_QK8_0; j++) {
            if (!ob_out[j] || xb[j] == 0.0f) continue;
            const float v = fabsf(xb[j]);
            for (int m = 1; m <= 127; m++) {
                const uint16_t dh = sk_f32_to_f16(v / (float)m);
                const float d = sk_f16_to_f32(dh);
                if (!(d > 0.0f) || !isfinite(d)) continue;
                if (roundf(amax / d) > 127.0f) continue;  /* would clip the block */
                const double err = block_err(xb, ob_out, dh, q);
                if (err < best) {
                    best = err;
                    bestd = dh;
                    memcpy(bestq, q, sizeof q);
                    found = 1;
                }
            }
        }
        if (found) {
            ob[0] = (uint8_t)(bestd & 0xff);
            ob[1] = (uint8_t)(bestd >> 8);
            for (int j = 0; j < SK_QK8_0; j++) ob[2 + j] = (uint8_t)bestq[j];
        }
    }
}

/* Nearest integer (ties to even) of v clamped to [-127, 127], in plain float arithmetic
 * (adding and subtracting 1.5 * 2^23), so the scale search needs no libm call. */
static inline float round_clamp(float v) {
    if (!(v == v)) return 0.0f;
    v = v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v;
    return (v + 12582912.0f) - 12582912.0f;
}

void sk_quantize_q8_0_weighted(const float *x, const uint8_t *is_outlier, const float *colw,
                               uint8_t *out, size_t n) {
    if (is_outlier) sk_quantize_q8_0_exact_cols(x, is_outlier, out, n);
    else sk_quantize_q8_0(x, out, n);
    if (!colw) return;
    const size_t nb = n / SK_QK8_0;
    for (size_t b = 0; b < nb; b++) {
        const float *xb = x + b * SK_QK8_0;
        const float *wb = colw + b * SK_QK8_0;
        uint8_t *ob = out + b * SK_Q8_0_BLOCK_BYTES;
        int skip = 0;
        float amax = 0.0f;
        for (int j = 0; j < SK_QK8_0; j++) {
            if (is_outlier && is_outlier[b * SK_QK8_0 + (size_t)j]) skip = 1;
            if (fabsf(xb[j]) > amax) amax = fabsf(xb[j]);
        }
        if (skip || !isfinite(amax) || amax == 0.0f) continue;
        float best = 0.0f;  /* ggml's bytes, scored the same way as the candidates */
        {
            const float d = sk_f16_to_f32((uint16_t)(ob[0] | (ob[1] << 8)));
            for (int j = 0; j < SK_QK8_0; j++) {
                const float diff = xb[j] - d * (float)(int8_t)ob[2 + j];
                best += wb[j] * diff * diff;
            }
        }
        int best_t = 0;
        uint16_t best_dh = 0;
        for (int t = -16; t <= 32; t += 2) {
            if (t == 0) continue;
            const uint16_t dh = sk_f32_to_f16(amax / 127.0f * (1.0f - (float)t / 512.0f));
            const float d = sk_f16_to_f32(dh);
            if (!(d > 0.0f) || !isfinite(d)) continue;
            const float id = 1.0f / d;
            float err = 0.0f;
            for (int j = 0; j < SK_QK8_0; j++) {
                const float r = round_clamp(xb[j] * id), diff = xb[j] - d * r;
                err += wb[j] * diff * diff;
            }
            if (err < best) {
                best = err;
                best_t = t;
                best_dh = dh;
            }
        }
        if (best_t != 0) {
            const float d = sk_f16_to_f32(best_dh), id = 1.0f / d;
            ob[0] = (uint8_t)(best_dh & 0xff);
            ob[1] = (uint8_t)(best_dh >> 8);
            for (int j = 0; j < SK_QK8_0; j++) ob[2 + j] = (uint8_t)(int8_t)(int)round_clamp(xb[j] * id);
        }
    }
}

/* ------------------------------------------------------------------ GPTQ rounding --- */

/* In-place Cholesky factor of the k x k symmetric positive definite a (row-major, lower
 * triangle written, a = L L^T). 0, or -1 when a is not positive definite. */
static int cholesky_lower(double *a, size_t k) {
    for (size_t j = 0; j < k; j++) {
        double s = a[j * k + j];
        for (size_t p = 0; p < j; p++) s -= a[j * k + p] * a[j * k + p];
        if (!(s > 0.0)) return -1;
        const double d = sqrt(s);
        a[j * k + j] = d;
        for (size_t i = j + 1; i < k; i++) {
            double t = a[i * k + j];
            for (size_t p = 0; p < j; p++) t -= a[i * k + p] * a[j * k + p];
            a[i * k + j] = t / d;
        }
    }
    return 0;
}

int sk_quantize_q8_0_gptq(const float *W, size_t n_out, size_t n_in, const float *xtx,
                          const uint8_t *is_outlier, uint8_t *out) {
    const size_t k = n_in, nb = n_in / SK_QK8_0;
    if (k == 0 || nb * SK_QK8_0 != k || !xtx) return -1;
    double *h = malloc(k * k * sizeof *h), *inv = malloc(k * k * sizeof *inv);
    float *u = malloc(k * k * sizeof *u), *w = malloc(n_out * k * sizeof *w);
    int rc = -1;
    if (!h || !inv || !u || !w) goto done;
    /* H restricted to what the int8 product sees: outlier channels leave it (their
     * activations are zeroed), as do channels never seen non-zero; both get a unit diagonal
     * and no coupling, so their rounding error is not propagated. */
    double diag = 0.0;
    size_t live = 0;
    for (size_t i = 0; i < k; i++) {
        const int dead_i = (is_outlier && is_outlier[i]) || !(xtx[i * k + i] > 0.0f);
        for (size_t j = i; j < k; j++) {
            const int dead_j = (is_outlier && is_outlier[j]) || !(xtx[j * k + j] > 0.0f);
            double v = dead_i || dead_j ? 0.0 : (double)xtx[i * k + j];
            if (!isfinite(v)) goto done;
            h[i * k + j] = h[j * k + i] = v;
        }
        if (!dead_i) {
            diag += h[i * k + i];
            live++;
        }
    }
    if (live == 0) goto done;
    const double damp = SK_GPTQ_DAMP * diag / (double)live;
    for (size_t i = 0; i < k; i++) h[i * k + i] = h[i * k + i] > 0.0 ? h[i * k + i] + damp : 1.0;
    /* U = the upper Cholesky factor of H^-1 (H = L L^T, H^-1 = L^-T L^-1): GPTQ's update
     * order. inv first holds L^-1 (lower). */
    if (cholesky_lower(h, k)) goto done;
    memset(inv, 0, k * k * sizeof *inv);
    for (size_t j = 0; j < k; j++) {
        inv[j * k + j] = 1.0 / h[j * k + j];
        for (size_t i = j + 1; i < k; i++) {
            double s = 0.0;
            for (size_t p = j; p < i; p++) s += h[i * k + p] * inv[p * k + j];
            inv[i * k + j] = -s / h[i * k + i];
        }
    }
    /* H^-1 = (L^-1)^T L^-1 into h (full) */
    for (size_t i = 0; i < k; i++)
        for (size_t j = i; j < k; j++) {
            double s = 0.0;
            for (size_t p = j; p < k; p++) s += inv[p * k + i] * inv[p * k + j];
            h[i * k + j] = h[j * k + i] = s;
        }
    if (cholesky_lower(h, k)) goto done;   /* H^-1 = C C^T; U = C^T */
    for (size_t i = 0; i < k; i++)
        for (size_t j = 0; j < k; j++) u[i * k + j] = j >= i ? (float)h[j * k + i] : 0.0f;
    memcpy(w, W, n_out * k * sizeof *w);
    const size_t row_bytes = nb * SK_Q8_0_BLOCK_BYTES;
    float *scale = malloc(n_out * sizeof *scale);
    if (!scale) goto done;
    for (size_t b = 0; b < nb; b++) {
        /* the block's scale from the weights as the updates so far left them (ggml's rule on
         * the columns the int8 product sees) */
        for (size_t o = 0; o < n_out; o++) {
            const float *wb = w + o * k + b * SK_QK8_0;
            float amax = 0.0f;
            for (int j = 0; j < SK_QK8_0; j++)
                if (!(is_outlier && is_outlier[b * SK_QK8_0 + (size_t)j]) && fabsf(wb[j]) > amax)
                    amax = fabsf(wb[j]);
            const uint16_t dh = sk_f32_to_f16(amax / 127.0f);
            uint8_t *ob = out + o * row_bytes + b * SK_Q8_0_BLOCK_BYTES;
            ob[0] = (uint8_t)(dh & 0xff);
            ob[1] = (uint8_t)(dh >> 8);
            scale[o] = sk_f16_to_f32(dh);
        }
        for (size_t jj = 0; jj < SK_QK8_0; jj++) {
            const size_t j = b * SK_QK8_0 + jj;
            const int outl = is_outlier && is_outlier[j];
            const float ujj = u[j * k + j], *uj = u + j * k;
            for (size_t o = 0; o < n_out; o++) {
                float *wo = w + o * k;
                const float d = scale[o];
                const float q = outl || !(d > 0.0f) || !isfinite(d) ? 0.0f : round_clamp(wo[j] / d);
                out[o * row_bytes + b * SK_Q8_0_BLOCK_BYTES + 2 + jj] = (uint8_t)(int8_t)(int)q;
                if (outl) continue;
                const float err = (wo[j] - d * q) / ujj;
                for (size_t l = j + 1; l < k; l++) wo[l] -= err * uj[l];
            }
        }
    }
    free(scale);
    rc = 0;
done:
    free(h);
    free(inv);
    free(u);
    free(w);
    return rc;
}
