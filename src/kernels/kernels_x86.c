/*
 * kernels_x86.c - the element-wise and row kernels on AVX2+FMA and AVX-512F (see
 * kernels.h): GELU / GeGLU, the attention softmax, LayerNorm, RoPE, 16-bit widening and the
 * finiteness check. Each function carries its own target attribute, so the file builds
 * without -mavx2 and the dispatcher only calls a function when sk_cpu_features() reports the
 * instructions. (The GEMMs are gemm_x86.c's.)
 *
 * exp and erf: exp is accurate to a few ulp (Cephes-style range reduction and a degree-6
 * polynomial), so the softmax stays within ~1e-6 relative of the libm-based reference; GELU
 * takes erf from a rational fit with an absolute error of about 1.4e-7 max(1, |x|), the
 * accuracy class of the reference runtime's own float GELU (see gelu256).
 */
#include "kernels.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#include <math.h>
#include <string.h>

#define AVX2 __attribute__((target("avx2,fma")))
#define AVX2F __attribute__((target("avx2,fma,f16c")))
#define AVX512 __attribute__((target("avx512f,avx2,fma,f16c")))
#define INLINE __attribute__((always_inline)) static inline

/* ------------------------------------------------------------------ AVX2 math ---- */

AVX2 static inline float hsum256(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

AVX2 static inline float hmax256(__m256 v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* exp(x) for x in about [-87.3, 88.7]; smaller x give 0 (flushes below the normal range). */
AVX2 static inline __m256 exp256(__m256 x) {
    const __m256 lo = _mm256_set1_ps(-87.3f), hi = _mm256_set1_ps(88.7f);
    __m256 under = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
    x = _mm256_max_ps(_mm256_min_ps(x, hi), lo);
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    __m256 res = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
    return _mm256_andnot_ps(under, res);
}

/* GELU as 0.5 x (1 + erf(x / sqrt 2)), erf(z) = z P(z^2) / Q(z^2) on |z| <= 3.9 (a rational
 * fit of this project, tools/golden/fit_gelu_erf.py; erf(3.9) = 1 - 3.5e-8) clamped to
 * [-1, 1]. Absolute error about 1.2e-7 max(1, |x|), the accuracy class of the reference's
 * own float erf (PyTorch's GELU, 1e-7 max(1, |x|)): neither keeps relative accuracy in the
 * far negative tail, where 1 + erf cancels. No exp and no second branch, so GeGLU costs
 * about half of an erfc-based GELU. */
static const float gelu_erf_p[6] = {1.128378987e+00f, 1.919294000e-01f, 5.296520516e-02f,
                                    3.836323274e-03f, 2.874355123e-04f, 2.050359171e-06f};
static const float gelu_erf_q[6] = {1.0f, 5.034247637e-01f, 1.147532389e-01f,
                                    1.510811411e-02f, 1.181582455e-03f, 3.822930375e-05f};
#define GELU_ERF_ZMAX 3.9f

AVX2 static inline __m256 gelu256(__m256 x) {
    const __m256 zmax = _mm256_set1_ps(GELU_ERF_ZMAX), one = _mm256_set1_ps(1.0f);
    __m256 z = _mm256_mul_ps(x, _mm256_set1_ps(0.70710678118654752f));
    z = _mm256_max_ps(_mm256_min_ps(z, zmax), _mm256_sub_ps(_mm256_setzero_ps(), zmax));
    const __m256 u = _mm256_mul_ps(z, z);
    __m256 p = _mm256_set1_ps(gelu_erf_p[5]), q = _mm256_set1_ps(gelu_erf_q[5]);
    for (int k = 4; k >= 0; k--) {
        p = _mm256_fmadd_ps(p, u, _mm256_set1_ps(gelu_erf_p[k]));
        q = _mm256_fmadd_ps(q, u, _mm256_set1_ps(gelu_erf_q[k]));
    }
    __m256 erf = _mm256_div_ps(_mm256_mul_ps(z, p), q);
    erf = _mm256_max_ps(_mm256_min_ps(erf, one), _mm256_sub_ps(_mm256_setzero_ps(), one));
    const __m256 h = _mm256_mul_ps(x, _mm256_set1_ps(0.5f));
    return _mm256_fmadd_ps(h, erf, h);
}

AVX2 void sk_geglu_avx2(const float *a, const float *g, float *y, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_mul_ps(gelu256(_mm256_loadu_ps(a + i)),
                                              _mm256_loadu_ps(g + i)));
    if (i < n) {
        float ta[8] = {0}, tg[8] = {0};
        memcpy(ta, a + i, (n - i) * sizeof(float));
        memcpy(tg, g + i, (n - i) * sizeof(float));
        _mm256_storeu_ps(ta, _mm256_mul_ps(gelu256(_mm256_loadu_ps(ta)), _mm256_loadu_ps(tg)));
        memcpy(y + i, ta, (n - i) * sizeof(float));
    }
}

AVX2 void sk_gelu_avx2(float *x, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, gelu256(_mm256_loadu_ps(x + i)));
    if (i < n) {
        float t[8] = {0};
        memcpy(t, x + i, (n - i) * sizeof(float));
        _mm256_storeu_ps(t, gelu256(_mm256_loadu_ps(t)));
        memcpy(x + i, t, (n - i) * sizeof(float));
    }
}

AVX2 void sk_attn_softmax_avx2(float *x, size_t n, float scale) {
    if (n == 0) return;
    const __m256 vs = _mm256_set1_ps(scale);
    __m256 vm = _mm256_set1_ps(-INFINITY);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + i), vs);
        _mm256_storeu_ps(x + i, v);
        vm = _mm256_max_ps(vm, v);
    }
    float mx = hmax256(vm);
    for (; i < n; i++) {
        x[i] *= scale;
        if (x[i] > mx) mx = x[i];
    }
    const __m256 vmx = _mm256_set1_ps(mx);
    __m256 vsum = _mm256_setzero_ps();
    for (i = 0; i + 8 <= n; i += 8) {
        __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(x + i), vmx));
        _mm256_storeu_ps(x + i, e);
        vsum = _mm256_add_ps(vsum, e);
    }
    float sum = hsum256(vsum);
    if (i < n) {
        float t[8];
        for (size_t j = 0; j < 8; j++) t[j] = i + j < n ? x[i + j] - mx : -INFINITY;
        __m256 e = exp256(_mm256_loadu_ps(t));
        _mm256_storeu_ps(t, e);
        for (size_t j = 0; i + j < n; j++) {
            x[i + j] = t[j];
            sum += t[j];
        }
    }
    const __m256 inv = _mm256_set1_ps(1.0f / sum);
    for (i = 0; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), inv));
    for (; i < n; i++) x[i] *= 1.0f / sum;
}

/* Products rounded separately (no FMA), like the reference and PyTorch's elementwise ops,
 * so the rotation is bitwise the same as sk_rope_ref. */
AVX2 void sk_rope_avx2(float *u, size_t n_heads, size_t D, const float *c, const float *s) {
    const size_t half = D / 2;
    if (half % 8 != 0) {
        sk_rope_ref(u, n_heads, D, c, s);
        return;
    }
    for (size_t h = 0; h < n_heads; h++) {
        float *v = u + h * D;
        for (size_t i = 0; i < half; i += 8) {
            __m256 x1 = _mm256_loadu_ps(v + i), x2 = _mm256_loadu_ps(v + half + i);
            __m256 vc = _mm256_loadu_ps(c + i), vs = _mm256_loadu_ps(s + i);
            _mm256_storeu_ps(v + i, _mm256_sub_ps(_mm256_mul_ps(x1, vc), _mm256_mul_ps(x2, vs)));
            _mm256_storeu_ps(v + half + i,
                             _mm256_add_ps(_mm256_mul_ps(x2, vc), _mm256_mul_ps(x1, vs)));
        }
    }
}

AVX2F void sk_widen16_avx2(int wtype, const void *src, float *dst, size_t n) {
    const uint16_t *h = src;
    size_t i = 0;
    if (wtype == SK_PACK_F16)
        for (; i + 8 <= n; i += 8)
            _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(h + i))));
    else
        for (; i + 8 <= n; i += 8) {
            __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(h + i)));
            _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(v, 16)));
        }
    if (i < n) sk_widen16_ref(wtype, h + i, dst + i, n - i);
}

/* The lanes of the 16-wide vector at i (i < n) that fall before n: all 16, or the first n - i. */
AVX512 INLINE __mmask16 lanes_before(size_t i, size_t n) {
    return n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
}

/* Masked load and store that take the plain instruction for a whole vector (measured on
 * Zen 5: LayerNorm of 88 x 64 rows 0.55 instead of 0.59 us, RoPE a third faster). */
AVX512 INLINE __m512 load_m(const float *p, __mmask16 m) {
    return m == 0xFFFF ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(m, p);
}
AVX512 INLINE void store_m(float *p, __mmask16 m, __m512 v) {
    if (m == 0xFFFF)
        _mm512_storeu_ps(p, v);
    else
        _mm512_mask_storeu_ps(p, m, v);
}

/* The AVX2 rotation 16 lanes wide (the same operations, so the same bits); a masked tail
 * takes any half-size. */
AVX512 void sk_rope_avx512(float *u, size_t n_heads, size_t D, const float *c, const float *s) {
    const size_t half = D / 2;
    for (size_t h = 0; h < n_heads; h++) {
        float *v = u + h * D;
        for (size_t i = 0; i < half; i += 16) {
            const __mmask16 m = lanes_before(i, half);
            const __m512 x1 = load_m(v + i, m), x2 = load_m(v + half + i, m);
            const __m512 vc = load_m(c + i, m), vs = load_m(s + i, m);
            store_m(v + i, m, _mm512_sub_ps(_mm512_mul_ps(x1, vc), _mm512_mul_ps(x2, vs)));
            store_m(v + half + i, m, _mm512_add_ps(_mm512_mul_ps(x2, vc), _mm512_mul_ps(x1, vs)));
        }
    }
}

/* An exponent field of all ones is an infinity or a NaN. */
AVX512 int sk_all_finite_avx512(const float *x, size_t n) {
    const __m512i expo = _mm512_set1_epi32(0x7f800000);
    __mmask16 bad = 0;
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        bad |= _mm512_cmpeq_epi32_mask(_mm512_and_si512(_mm512_loadu_si512(x + i), expo), expo);
    if (i < n) {
        const __mmask16 m = lanes_before(i, n);
        bad |= _mm512_mask_cmpeq_epi32_mask(
            m, _mm512_and_si512(_mm512_maskz_loadu_epi32(m, x + i), expo), expo);
    }
    return bad == 0;
}

/* ------------------------------------------------------------------ AVX-512 math - */

/* exp and GELU of G (1-8) vectors in lockstep: each step is applied to every vector before
 * the next. Each is a dependency chain of 40-100 cycles; issued one after another the
 * out-of-order window holds only a few of them and the core idles on latency, while
 * independent chains interleaved fill the pipes (eight made the erfc-based GeGLU 20 % faster
 * than four on a 64-FLOP/cycle core). G = 1 is the one-vector form; every G gives the same
 * bits per lane. */
#define MATH_G 8

/* exp(x): below about -103.9 the result is 0, above 88.7 it is +inf (vscalefps scales by
 * 2^n with IEEE overflow and gradual underflow, so no range masks are needed; only the
 * clamp from below keeps -inf and huge negatives out of the reduction). */
AVX512 INLINE void exp512_n(__m512 *x, const int G) {
    const __m512 lo = _mm512_set1_ps(-104.0f);
    const __m512 one = _mm512_set1_ps(1.0f);
    __m512 n[MATH_G], r[MATH_G], q[MATH_G];
#pragma GCC unroll 8
    for (int j = 0; j < G; j++) {
        const __m512 c = _mm512_max_ps(x[j], lo);
        n[j] = _mm512_roundscale_ps(_mm512_mul_ps(c, _mm512_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        r[j] = _mm512_fnmadd_ps(n[j], _mm512_set1_ps(0.693359375f), c);
        r[j] = _mm512_fnmadd_ps(n[j], _mm512_set1_ps(-2.12194440e-4f), r[j]);
        q[j] = _mm512_fmadd_ps(_mm512_set1_ps(1.9875691500e-4f), r[j],
                               _mm512_set1_ps(1.3981999507e-3f));
    }
    static const float e[4] = {8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f,
                               5.0000001201e-1f};
#pragma GCC unroll 8
    for (int k = 0; k < 4; k++)
#pragma GCC unroll 8
        for (int j = 0; j < G; j++) q[j] = _mm512_fmadd_ps(q[j], r[j], _mm512_set1_ps(e[k]));
#pragma GCC unroll 8
    for (int j = 0; j < G; j++) {
        q[j] = _mm512_fmadd_ps(q[j], _mm512_mul_ps(r[j], r[j]), _mm512_add_ps(r[j], one));
        x[j] = _mm512_scalef_ps(q[j], n[j]);
    }
}

/* The formula of gelu256 (see there), G vectors in lockstep. */
AVX512 INLINE void gelu512_n(__m512 *v, const int G) {
    const __m512 zmax = _mm512_set1_ps(GELU_ERF_ZMAX), one = _mm512_set1_ps(1.0f);
    __m512 z[MATH_G], u[MATH_G], p[MATH_G], q[MATH_G];
#pragma GCC unroll 8
    for (int j = 0; j < G; j++) {
        z[j] = _mm512_mul_ps(v[j], _mm512_set1_ps(0.70710678118654752f));
        z[j] = _mm512_max_ps(_mm512_min_ps(z[j], zmax), _mm512_sub_ps(_mm512_setzero_ps(), zmax));
        u[j] = _mm512_mul_ps(z[j], z[j]);
        p[j] = _mm512_set1_ps(gelu_erf_p[5]);
        q[j] = _mm512_set1_ps(gelu_erf_q[5]);
    }
#pragma GCC unroll 5
    for (int k = 4; k >= 0; k--)
#pragma GCC unroll 8
        for (int j = 0; j < G; j++) {
            p[j] = _mm512_fmadd_ps(p[j], u[j], _mm512_set1_ps(gelu_erf_p[k]));
            q[j] = _mm512_fmadd_ps(q[j], u[j], _mm512_set1_ps(gelu_erf_q[k]));
        }
#pragma GCC unroll 8
    for (int j = 0; j < G; j++) {
        /* 1/q by vrcp14ps and one Newton step (relative error ~2^-23, q in [1, 8.6]): a
         * 512-bit division occupies port 0 for as long as the rest of the formula */
        __m512 r = _mm512_rcp14_ps(q[j]);
        r = _mm512_fmadd_ps(_mm512_fnmadd_ps(q[j], r, one), r, r);
        __m512 erf = _mm512_mul_ps(_mm512_mul_ps(z[j], p[j]), r);
        erf = _mm512_max_ps(_mm512_min_ps(erf, one), _mm512_sub_ps(_mm512_setzero_ps(), one));
        const __m512 h = _mm512_mul_ps(v[j], _mm512_set1_ps(0.5f));
        v[j] = _mm512_fmadd_ps(h, erf, h);
    }
}

AVX512 static inline __m512 gelu512(__m512 x) {
    gelu512_n(&x, 1);
    return x;
}

AVX512 void sk_geglu_avx512(const float *a, const float *g, float *y, size_t n) {
    size_t i = 0;
    for (; i + 16 * MATH_G <= n; i += 16 * MATH_G) {
        __m512 v[MATH_G];
#pragma GCC unroll 8
        for (int j = 0; j < MATH_G; j++) v[j] = _mm512_loadu_ps(a + i + 16 * j);
        gelu512_n(v, MATH_G);
#pragma GCC unroll 8
        for (int j = 0; j < MATH_G; j++)
            _mm512_storeu_ps(y + i + 16 * j, _mm512_mul_ps(v[j], _mm512_loadu_ps(g + i + 16 * j)));
    }
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, _mm512_mul_ps(gelu512(_mm512_loadu_ps(a + i)),
                                              _mm512_loadu_ps(g + i)));
    if (i < n) {
        __mmask16 m = lanes_before(i, n);
        __m512 v = _mm512_mul_ps(gelu512(_mm512_maskz_loadu_ps(m, a + i)),
                                 _mm512_maskz_loadu_ps(m, g + i));
        _mm512_mask_storeu_ps(y + i, m, v);
    }
}

AVX512 void sk_gelu_avx512(float *x, size_t n) {
    size_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(x + i, gelu512(_mm512_loadu_ps(x + i)));
    if (i < n) {
        __mmask16 m = lanes_before(i, n);
        _mm512_mask_storeu_ps(x + i, m, gelu512(_mm512_maskz_loadu_ps(m, x + i)));
    }
}

/* Softmax of up to 8 rows of a score block in lockstep (see sk_attn_softmax_rows): each step
 * over every row before the next, so the exp chains of different rows overlap. Lanes outside
 * a row's [a, b) read nothing and store 0. */
AVX512 INLINE void softmax512_rows(float *x, size_t ld, const int G, size_t nk, const size_t *a,
                                  const size_t *b, float scale, const int full) {
    const __m512 vs = _mm512_set1_ps(scale);
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    __m512i va[8], vb[8];
    __m512 vm[8], vsum[8], vmx[8], inv[8];
    #pragma GCC unroll 8
    for (int r = 0; r < G; r++) {
        va[r] = _mm512_set1_epi32((int)a[r]);
        vb[r] = _mm512_set1_epi32((int)b[r]);
        vm[r] = _mm512_set1_ps(-INFINITY);
        vsum[r] = _mm512_setzero_ps();
    }
    for (size_t i = 0; i < nk; i += 16) {
        const __m512i idx = _mm512_add_epi32(lane, _mm512_set1_epi32((int)i));
        const __mmask16 in = lanes_before(i, nk);
        #pragma GCC unroll 8
        for (int r = 0; r < G; r++) {
            const __mmask16 m = full ? in : _mm512_cmpge_epi32_mask(idx, va[r]) &
                                            _mm512_cmplt_epi32_mask(idx, vb[r]);
            const __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + r * ld + i), vs);
            vm[r] = _mm512_mask_max_ps(vm[r], m, vm[r], v);
        }
    }
    #pragma GCC unroll 8
    for (int r = 0; r < G; r++) vmx[r] = _mm512_set1_ps(_mm512_reduce_max_ps(vm[r]));
    for (size_t i = 0; i < nk; i += 16) {
        const __m512i idx = _mm512_add_epi32(lane, _mm512_set1_epi32((int)i));
        const __mmask16 in = lanes_before(i, nk);
        __mmask16 m[8];
        __m512 e[8];
        #pragma GCC unroll 8
        for (int r = 0; r < G; r++) {
            m[r] = full ? in : _mm512_cmpge_epi32_mask(idx, va[r]) &
                               _mm512_cmplt_epi32_mask(idx, vb[r]);
            e[r] = _mm512_sub_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(m[r], x + r * ld + i), vs),
                                 vmx[r]);
        }
        exp512_n(e, G);
        #pragma GCC unroll 8
        for (int r = 0; r < G; r++) {
            e[r] = _mm512_maskz_mov_ps(m[r], e[r]);
            _mm512_mask_storeu_ps(x + r * ld + i, in, e[r]);
            vsum[r] = _mm512_add_ps(vsum[r], e[r]);
        }
    }
    #pragma GCC unroll 8
    for (int r = 0; r < G; r++) inv[r] = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(vsum[r]));
    for (size_t i = 0; i < nk; i += 16) {
        const __mmask16 in = lanes_before(i, nk);
        #pragma GCC unroll 8
        for (int r = 0; r < G; r++)
            _mm512_mask_storeu_ps(x + r * ld + i, in,
                                  _mm512_mul_ps(_mm512_maskz_loadu_ps(in, x + r * ld + i), inv[r]));
    }
}

AVX512 void sk_attn_softmax_rows_avx512(float *x, size_t ld, size_t nr, size_t nk,
                                        const size_t *a, const size_t *b, float scale) {
    size_t r = 0;
    for (; r + 8 <= nr; r += 8) {
        int full = 1;  /* every row over all nk columns (no window): no lane masks to build */
        for (int j = 0; j < 8; j++) full &= a[r + j] == 0 && b[r + j] == nk;
        if (full)
            softmax512_rows(x + r * ld, ld, 8, nk, a + r, b + r, scale, 1);
        else
            softmax512_rows(x + r * ld, ld, 8, nk, a + r, b + r, scale, 0);
    }
    for (; r + 4 <= nr; r += 4) softmax512_rows(x + r * ld, ld, 4, nk, a + r, b + r, scale, 0);
    for (; r < nr; r++) softmax512_rows(x + r * ld, ld, 1, nk, a + r, b + r, scale, 0);
}

/* Lane r of the result: the sum of the lanes of v[r], for 16 rows. A transposing tree:
 * each level halves the vectors and the lanes still to add, so 16 row sums cost 15 adds
 * instead of one reduction chain per row. */
AVX512 INLINE __m512 rowsum16_ps(const __m512 *v) {
    __m512 t[8], u[4], w[2];
    #pragma GCC unroll 8
    for (int k = 0; k < 8; k++)
        t[k] = _mm512_add_ps(_mm512_unpacklo_ps(v[2 * k], v[2 * k + 1]),
                             _mm512_unpackhi_ps(v[2 * k], v[2 * k + 1]));
    #pragma GCC unroll 4
    for (int k = 0; k < 4; k++) {
        const __m512d a = _mm512_castps_pd(t[2 * k]), b = _mm512_castps_pd(t[2 * k + 1]);
        u[k] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(a, b)),
                             _mm512_castpd_ps(_mm512_unpackhi_pd(a, b)));
    }
    #pragma GCC unroll 2
    for (int k = 0; k < 2; k++)
        w[k] = _mm512_add_ps(_mm512_shuffle_f32x4(u[2 * k], u[2 * k + 1], 0x88),
                             _mm512_shuffle_f32x4(u[2 * k], u[2 * k + 1], 0xDD));
    return _mm512_add_ps(_mm512_shuffle_f32x4(w[0], w[1], 0x88),
                         _mm512_shuffle_f32x4(w[0], w[1], 0xDD));
}

/* Residual add and LayerNorm. The statistics: the mean as hi + lo floats (a shift and the
 * mean of the shifted values), the variance of the centred values in float lanes. Rows go
 * sixteen at a time through each phase: their reductions share vector lanes (rowsum16_ps)
 * and their dependency chains (sums, reduction, division, square root) interleave. The
 * phases run over a chunk of up to four groups before the next phase starts, so one group's
 * long chain overlaps the next group's loads instead of stalling the phase after it. In a
 * group with fewer than 16 rows (nr), rows past the last repeat it and store nothing: every
 * group runs the same code. */
#define LN_GROUPS 4



typedef struct ln512_stats {
    _Alignas(64) float mhi[16 * LN_GROUPS], mlo[16 * LN_GROUPS], rs[16 * LN_GROUPS];
} ln512_stats;

AVX512 INLINE void ln512_row_offsets(size_t nr, size_t d, size_t *off) {
    #pragma GCC unroll 16
    for (int j = 0; j < 16; j++) off[j] = ((size_t)j < nr ? (size_t)j : nr - 1) * d;
}

/* Phase 1: the mean of each row as hi + lo floats: hi is the row's
 * first value and lo the mean of the shifted values x - hi. Rows of the residual stream can
 * sit far from zero (1e4 and more) with a spread near 1: a float sum of the raw values
 * would lose the digits that matter, the shifted values keep them (x - hi is exact for
 * values within a factor of two of hi, and small next to them otherwise). */
AVX512 INLINE void ln512_mean16(const float *x, size_t nr, size_t d, float *mhi, float *mlo) {
    size_t off[16];
    ln512_row_offsets(nr, d, off);
    __m512 s[16];
    #pragma GCC unroll 16
    for (int j = 0; j < 16; j++) {
        s[j] = _mm512_setzero_ps();
        mhi[j] = x[off[j]];
    }
    for (size_t i = 0; i < d; i += 16) {
        const __mmask16 m = lanes_before(i, d);
        #pragma GCC unroll 16
        for (int j = 0; j < 16; j++) {
            s[j] = _mm512_add_ps(s[j], _mm512_maskz_sub_ps(m, load_m(x + off[j] + i, m),
                                                           _mm512_set1_ps(mhi[j])));
        }
    }
    _mm512_store_ps(mlo, _mm512_mul_ps(rowsum16_ps(s), _mm512_set1_ps(1.0f / (float)d)));
}

/* Phase 2: 1 / sqrt(var + eps) of each row, from the centred values. */
AVX512 INLINE void ln512_rstd16(const float *x, size_t nr, size_t d, float eps, const float *mhi,
                                const float *mlo, float *rs) {
    size_t off[16];
    ln512_row_offsets(nr, d, off);
    __m512 q[16];
    #pragma GCC unroll 16
    for (int j = 0; j < 16; j++) q[j] = _mm512_setzero_ps();
    for (size_t i = 0; i < d; i += 16) {
        const __mmask16 m = lanes_before(i, d);
        #pragma GCC unroll 16
        for (int j = 0; j < 16; j++) {
            const __m512 t = _mm512_maskz_sub_ps(
                m, _mm512_sub_ps(load_m(x + off[j] + i, m), _mm512_set1_ps(mhi[j])),
                _mm512_set1_ps(mlo[j]));
            q[j] = _mm512_fmadd_ps(t, t, q[j]);
        }
    }
    const __m512 var = rowsum16_ps(q);
    const __m512d inv_d = _mm512_set1_pd(1.0 / (double)d), veps = _mm512_set1_pd((double)eps);
    #pragma GCC unroll 2
    for (int g = 0; g < 2; g++) {
        const __m256 vh = g ? _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(var), 1))
                            : _mm512_castps512_ps256(var);
        const __m512d v = _mm512_fmadd_pd(_mm512_cvtps_pd(vh), inv_d, veps);
        _mm256_store_ps(rs + 8 * g, _mm512_cvtpd_ps(_mm512_div_pd(_mm512_set1_pd(1.0),
                                                                  _mm512_sqrt_pd(v))));
    }
}

/* Phase 3: y = (x - mean) * rstd * w (+ b). */
AVX512 INLINE void ln512_apply16(const float *x, size_t nr, size_t d, const float *w,
                                 const float *b, const float *mhi, const float *mlo,
                                 const float *rs, float *y) {
    for (size_t i = 0; i < d; i += 16) {
        const __mmask16 m = lanes_before(i, d);
        const __m512 vw = load_m(w + i, m);
        const __m512 vb = b ? load_m(b + i, m) : _mm512_setzero_ps();
        for (size_t j = 0; j < nr; j++) {
            const __m512 t = _mm512_sub_ps(
                _mm512_sub_ps(load_m(x + j * d + i, m), _mm512_set1_ps(mhi[j])),
                _mm512_set1_ps(mlo[j]));
            __m512 v = _mm512_mul_ps(_mm512_mul_ps(t, _mm512_set1_ps(rs[j])), vw);
            if (b) v = _mm512_add_ps(v, vb);
            store_m(y + j * d + i, m, v);
        }
    }
}

/* a == NULL: plain LayerNorm of x (x is only read). */
AVX512 static void ln512(const float *x, const float *a, float *xs, size_t n_rows, size_t d,
                         const float *w, const float *b, float eps, float *y) {
    const float *src = a ? xs : x;  /* the rows to normalize */
    ln512_stats st;
    for (size_t r0 = 0; r0 < n_rows; r0 += 16 * LN_GROUPS) {
        const size_t nc = n_rows - r0 < 16 * LN_GROUPS ? n_rows - r0 : 16 * LN_GROUPS;
        if (a) { /* the residual add, over the chunk's rows while they are in cache */
            const size_t o = r0 * d, n = nc * d;
            size_t i = 0;
            for (; i + 16 <= n; i += 16)
                _mm512_storeu_ps(xs + o + i, _mm512_add_ps(_mm512_loadu_ps(x + o + i),
                                                           _mm512_loadu_ps(a + o + i)));
            for (; i < n; i++) xs[o + i] = x[o + i] + a[o + i];
        }
        for (size_t g = 0; g < nc; g += 16)
            ln512_mean16(src + (r0 + g) * d, nc - g < 16 ? nc - g : 16, d, st.mhi + g,
                         st.mlo + g);
        for (size_t g = 0; g < nc; g += 16)
            ln512_rstd16(src + (r0 + g) * d, nc - g < 16 ? nc - g : 16, d, eps, st.mhi + g,
                         st.mlo + g, st.rs + g);
        for (size_t g = 0; g < nc; g += 16)
            ln512_apply16(src + (r0 + g) * d, nc - g < 16 ? nc - g : 16, d, w, b, st.mhi + g,
                          st.mlo + g, st.rs + g, y + (r0 + g) * d);
    }
}

AVX512 void sk_add_layernorm_avx512(float *x, const float *a, size_t n_rows, size_t d,
                                    const float *w, const float *b, float eps, float *y) {
    ln512(x, a, x, n_rows, d, w, b, eps, y);
}

AVX512 void sk_layernorm_avx512(const float *x, size_t n_rows, size_t d, const float *w,
                                const float *b, float eps, float *y) {
    ln512(x, NULL, NULL, n_rows, d, w, b, eps, y);
}

/* Mean in double (the residual stream can carry values near 1e4-1e5, where a float sum
 * loses the digits that matter); centring with the mean split into two floats (hi + lo),
 * so x - mean keeps those digits too; variance of the centred values in float lanes. */
AVX2 void sk_layernorm_avx2(const float *x, size_t n_rows, size_t d, const float *w,
                            const float *b, float eps, float *y) {
    for (size_t r = 0; r < n_rows; r++) {
        const float *xr = x + r * d;
        float *yr = y + r * d;
        __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
        size_t i = 0;
        for (; i + 8 <= d; i += 8) {
            __m256 v = _mm256_loadu_ps(xr + i);
            s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
            s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
        }
        double lanes[4];
        _mm256_storeu_pd(lanes, _mm256_add_pd(s0, s1));
        double sum = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
        for (; i < d; i++) sum += xr[i];
        const double mean = sum / (double)d;
        const float mhi = (float)mean, mlo = (float)(mean - (double)mhi);
        const __m256 vhi = _mm256_set1_ps(mhi), vlo = _mm256_set1_ps(mlo);
        __m256 q0 = _mm256_setzero_ps(), q1 = _mm256_setzero_ps();
        for (i = 0; i + 16 <= d; i += 16) {
            __m256 t0 = _mm256_sub_ps(_mm256_sub_ps(_mm256_loadu_ps(xr + i), vhi), vlo);
            __m256 t1 = _mm256_sub_ps(_mm256_sub_ps(_mm256_loadu_ps(xr + i + 8), vhi), vlo);
            q0 = _mm256_fmadd_ps(t0, t0, q0);
            q1 = _mm256_fmadd_ps(t1, t1, q1);
        }
        double var = (double)hsum256(_mm256_add_ps(q0, q1));
        for (; i < d; i++) {
            double t = (double)xr[i] - mean;
            var += t * t;
        }
        const float rstd = (float)(1.0 / sqrt(var / (double)d + (double)eps));
        const __m256 vr = _mm256_set1_ps(rstd);
        for (i = 0; i + 8 <= d; i += 8) {
            __m256 t = _mm256_sub_ps(_mm256_sub_ps(_mm256_loadu_ps(xr + i), vhi), vlo);
            __m256 v = _mm256_mul_ps(_mm256_mul_ps(t, vr), _mm256_loadu_ps(w + i));
            if (b) v = _mm256_add_ps(v, _mm256_loadu_ps(b + i));
            _mm256_storeu_ps(yr + i, v);
        }
        for (; i < d; i++) {
            float v = ((xr[i] - mhi) - mlo) * rstd * w[i];
            yr[i] = b ? v + b[i] : v;
        }
    }
}

#else /* not x86-64: the SIMD entry points fall back to the scalar code */

void sk_geglu_avx2(const float *a, const float *g, float *y, size_t n) { sk_geglu_ref(a, g, y, n); }
void sk_rope_avx2(float *u, size_t n_heads, size_t D, const float *c, const float *s) {
    sk_rope_ref(u, n_heads, D, c, s);
}
void sk_widen16_avx2(int wtype, const void *src, float *dst, size_t n) {
    sk_widen16_ref(wtype, src, dst, n);
}
void sk_geglu_avx512(const float *a, const float *g, float *y, size_t n) { sk_geglu_ref(a, g, y, n); }
void sk_gelu_avx512(float *x, size_t n) { sk_gelu_ref(x, n); }
void sk_attn_softmax_rows_avx512(float *x, size_t ld, size_t nr, size_t nk, const size_t *a,
                                 const size_t *b, float scale) {
    sk_attn_softmax_rows_ref(x, ld, nr, nk, a, b, scale);
}
void sk_gelu_avx2(float *x, size_t n) { sk_gelu_ref(x, n); }
void sk_attn_softmax_avx2(float *x, size_t n, float scale) { sk_attn_softmax_ref(x, n, scale); }
void sk_layernorm_avx2(const float *x, size_t n_rows, size_t d, const float *w, const float *b,
                       float eps, float *y) {
    sk_layernorm_ref(x, n_rows, d, w, b, eps, y);
}
void sk_layernorm_avx512(const float *x, size_t n_rows, size_t d, const float *w,
                         const float *b, float eps, float *y) {
    sk_layernorm_ref(x, n_rows, d, w, b, eps, y);
}
void sk_add_layernorm_avx512(float *x, const float *a, size_t n_rows, size_t d, const float *w,
                             const float *b, float eps, float *y) {
    sk_add_layernorm_ref(x, a, n_rows, d, w, b, eps, y);
}
int sk_all_finite_avx512(const float *x, size_t n) { return sk_all_finite_ref(x, n); }
void sk_rope_avx512(float *u, size_t n_heads, size_t D, const float *c, const float *s) {
    sk_rope_ref(u, n_heads, D, c, s);
}
#endif
