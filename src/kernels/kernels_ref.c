/* kernels_ref.c - scalar reference kernels (see kernels.h). These define the numbers every
 * SIMD kernel is tested against, so they stay simple. */
#include <math.h>

#include "kernels.h"
#include "../util/util.h"
#include "../numeric/numeric.h"
#include <string.h>

void sk_gemm_ref(const float *x, size_t ldx, size_t n_rows, size_t n_in, const float *w,
                 const float *b, size_t n_out, float *y, size_t ldy) {
    for (size_t r = 0; r < n_rows; r++) {
        const float *xr = x + r * ldx;
        float *yr = y + r * ldy;
        for (size_t o = 0; o < n_out; o++) {
            const float *wo = w + o * n_in;
            float s = 0.0f;
            for (size_t i = 0; i < n_in; i++) s += xr[i] * wo[i];
            yr[o] = b ? s + b[o] : s;
        }
    }
}

void sk_layernorm_ref(const float *x, size_t n_rows, size_t d, const float *w, const float *b,
                      float eps, float *y) {
    for (size_t r = 0; r < n_rows; r++) {
        const float *xr = x + r * d;
        float *yr = y + r * d;
        double sum = 0.0;
        for (size_t i = 0; i < d; i++) sum += xr[i];
        double mean = sum / (double)d;
        double var = 0.0;
        for (size_t i = 0; i < d; i++) {
            double t = xr[i] - mean;
            var += t * t;
        }
        var /= (double)d;
        double rstd = 1.0 / sqrt(var + (double)eps);
        for (size_t i = 0; i < d; i++) {
            float v = (float)((xr[i] - mean) * rstd) * w[i];
            yr[i] = b ? v + b[i] : v;
        }
    }
}

void sk_add(float *restrict x, const float *restrict a, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] += a[i];
}

void sk_add_layernorm_ref(float *x, const float *a, size_t n_rows, size_t d, const float *w,
                          const float *b, float eps, float *y) {
    if (a) sk_add(x, a, n_rows * d);
    sk_layernorm_ref(x, n_rows, d, w, b, eps, y);
}

float sk_gelu1(float x) {
    return 0.5f * x * (1.0f + erff(x * 0.70710678118654752440f));
}

void sk_geglu_ref(const float *a, const float *g, float *y, size_t n) {
    for (size_t i = 0; i < n; i++) y[i] = sk_gelu1(a[i]) * g[i];
}

void sk_gelu_ref(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = sk_gelu1(x[i]);
}

void sk_attn_softmax_ref(float *x, size_t n, float scale) {
    if (n == 0) return;
    float mx = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        x[i] *= scale;
        if (x[i] > mx) mx = x[i];
    }
    float sum = 0.0f;
    for (size_t i = 0; i < n; i++) {
        x[i] = expf(x[i] - mx);
        sum += x[i];
    }
    float inv = 1.0f / sum;
    for (size_t i = 0; i < n; i++) x[i] *= inv;
}

void sk_attn_softmax_rows_each(sk_softmax_row_fn row_softmax, float *x, size_t ld, size_t nr,
                               size_t nk, const size_t *a, const size_t *b, float scale) {
    for (size_t r = 0; r < nr; r++) {
        float *row = x + r * ld;
        for (size_t i = 0; i < a[r]; i++) row[i] = 0.0f;
        row_softmax(row + a[r], b[r] - a[r], scale);
        for (size_t i = b[r]; i < nk; i++) row[i] = 0.0f;
    }
}

void sk_attn_softmax_rows_ref(float *x, size_t ld, size_t nr, size_t nk, const size_t *a,
                              const size_t *b, float scale) {
    sk_attn_softmax_rows_each(sk_attn_softmax_ref, x, ld, nr, nk, a, b, scale);
}

size_t sk_packed_floats(size_t n_out, size_t n_in) {
    size_t panels = n_out / SK_PANEL + (n_out % SK_PANEL != 0), r;
    if (sk_mul_size(panels, SK_PANEL, &r) || sk_mul_size(r, n_in, &r)) return 0;
    return r;
}

void sk_pack_ref(const float *w, size_t ldw, size_t n_out, size_t n_in, float *out) {
    size_t panels = n_out / SK_PANEL + (n_out % SK_PANEL != 0);
    for (size_t p = 0; p < panels; p++) {
        float *dst = out + p * n_in * SK_PANEL;
        const float *rows[SK_PANEL];
        size_t nc = n_out - p * SK_PANEL < SK_PANEL ? n_out - p * SK_PANEL : SK_PANEL;
        for (size_t c = 0; c < nc; c++) rows[c] = w + (p * SK_PANEL + c) * ldw;
        for (size_t i = 0; i < n_in; i++) {
            float *d = dst + i * SK_PANEL;
            for (size_t c = 0; c < nc; c++) d[c] = rows[c][i];
            for (size_t c = nc; c < SK_PANEL; c++) d[c] = 0.0f;
        }
    }
}

void sk_pack_u16(const uint16_t *w, size_t ldw, size_t n_out, size_t n_in, uint16_t *out) {
    size_t panels = n_out / SK_PANEL + (n_out % SK_PANEL != 0);
    for (size_t p = 0; p < panels; p++) {
        uint16_t *dst = out + p * n_in * SK_PANEL;
        const uint16_t *rows[SK_PANEL];
        size_t nc = n_out - p * SK_PANEL < SK_PANEL ? n_out - p * SK_PANEL : SK_PANEL;
        for (size_t c = 0; c < nc; c++) rows[c] = w + (p * SK_PANEL + c) * ldw;
        for (size_t i = 0; i < n_in; i++) {
            uint16_t *d = dst + i * SK_PANEL;
            for (size_t c = 0; c < nc; c++) d[c] = rows[c][i];
            for (size_t c = nc; c < SK_PANEL; c++) d[c] = 0;
        }
    }
}

size_t sk_pack_elem_size(int wtype) {
    return wtype == SK_PACK_F32 || wtype == SK_PACK_AMX_BF16X3 || wtype == SK_PACK_NEON_BF16X3 ? 4 : 2;
}

/* Scalar GEMM on the packed layout: each output is one sequential f32 sum over i, like the
 * reference, so the two agree closely (identically without FMA contraction). 16-bit panels
 * are widened a block of SK_SCALAR_KC rows at a time into a stack buffer, so each weight is
 * converted once per call rather than once per row of x. */
#define SK_SCALAR_KC 128

void sk_gemm_scalar(const float *x, size_t ldx, size_t n_rows, const sk_packed *w, float *y,
                    size_t ldy) {
    const size_t k = w->n_in, m = w->n_out, rs = sk_packed_rstride(w);
    float tmp[SK_SCALAR_KC * SK_PANEL];
    for (size_t p = 0; p * SK_PANEL < m; p++) {
        const size_t nc = m - p * SK_PANEL < SK_PANEL ? m - p * SK_PANEL : SK_PANEL;
        for (size_t r = 0; r < n_rows; r++)
            for (size_t c = 0; c < nc; c++) y[r * ldy + p * SK_PANEL + c] = 0.0f;
        for (size_t k0 = 0; k0 < k; k0 += SK_SCALAR_KC) {
            const size_t kc = k - k0 < SK_SCALAR_KC ? k - k0 : SK_SCALAR_KC;
            const size_t idx = p * w->pstride + k0 * rs;
            const float *panel;
            if (w->wtype == SK_PACK_F32) {
                panel = (const float *)w->data + idx;
            } else {
                sk_widen16_ref(w->wtype, (const uint16_t *)w->data + idx, tmp, kc * SK_PANEL);
                panel = tmp;
            }
            for (size_t r = 0; r < n_rows; r++) {
                const float *xr = x + r * ldx + k0;
                float acc[SK_PANEL];
                float *yr = y + r * ldy + p * SK_PANEL;
                for (size_t c = 0; c < SK_PANEL; c++) acc[c] = c < nc ? yr[c] : 0.0f;
                for (size_t i = 0; i < kc; i++) {
                    const float xi = xr[i];
                    const float *pr = panel + i * (w->wtype == SK_PACK_F32 ? rs : SK_PANEL);
                    for (size_t c = 0; c < SK_PANEL; c++) acc[c] += xi * pr[c];
                }
                for (size_t c = 0; c < nc; c++) yr[c] = acc[c];
            }
        }
        if (w->bias)
            for (size_t r = 0; r < n_rows; r++)
                for (size_t c = 0; c < nc; c++) y[r * ldy + p * SK_PANEL + c] += w->bias[p * SK_PANEL + c];
    }
}

void sk_rope_ref(float *u, size_t n_heads, size_t D, const float *c, const float *s) {
    const size_t half = D / 2;
    for (size_t h = 0; h < n_heads; h++) {
        float *v = u + h * D;
        for (size_t i = 0; i < half; i++) {
            float x1 = v[i], x2 = v[i + half];
            v[i] = x1 * c[i] - x2 * s[i];
            v[i + half] = x2 * c[i] + x1 * s[i];
        }
    }
}

void sk_widen16_ref(int wtype, const void *src, float *dst, size_t n) {
    const unsigned char *b = src;
    for (size_t i = 0; i < n; i++) {
        uint16_t h = (uint16_t)(b[2 * i] | (b[2 * i + 1] << 8));  /* GGUF is little-endian */
        dst[i] = wtype == SK_PACK_F16 ? sk_f16_to_f32(h) : sk_bf16_to_f32(h);
    }
}

int sk_all_finite_ref(const float *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return 0;
    return 1;
}

float sk_packed_elem(const sk_packed *w, size_t o, size_t i) {
    const size_t p = o / SK_PANEL, c = o % SK_PANEL, at = p * w->pstride + i * sk_packed_rstride(w) + c;
    if (w->wtype == SK_PACK_F32) return ((const float *)w->data)[at];
    float v;
    sk_widen16_ref(w->wtype, (const uint16_t *)w->data + at, &v, 1);
    return v;
}
