/* temperature_fit.c - laya.calibrate's temperature fits and the temperature rewrite of a
 * GGUF file. See temperature_fit.h for what is reproduced and how. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "temperature_fit.h"
#include "gate.h"
#include "torch_f32.h"

const char *const sk_calib_bucket_names[SK_CALIB_BUCKETS] = {
    "choice:2", "choice:3-5", "choice:6-10", "choice:11+",
    "score:2",  "score:3-5",  "score:6-10",  "score:11+",
    "noul:2",   "noul:3-5",   "noul:6-10",   "noul:11+"};

int sk_calib_bucket(int qt, size_t k) { return qt * 4 + (sk_temp_bucket(k) - 1); }

void sk_calib_set_free(sk_calib_set *s) {
    if (!s) return;
    free(s->r);
    free(s->z);
    free(s->t);
    memset(s, 0, sizeof *s);
}

int sk_calib_add(sk_calib_set *s, int qt, const float *z, const double *t, size_t k, sk_err *e) {
    if (qt < 0 || qt > 2) return sk_fail(e, SKYCMD_E_REQUEST, "qtype must be an integer between 0 and 2");
    if (k < 1) return sk_fail(e, SKYCMD_E_REQUEST, "k must be an integer between 1 and the vector length");
    double sum = 0;
    for (size_t i = 0; i < k; i++) {
        if (!isfinite(z[i])) return sk_fail(e, SKYCMD_E_REQUEST, "logits must contain only finite values");
        float tf = (float)t[i];
        if (!isfinite(t[i]) || !isfinite(tf))
            return sk_fail(e, SKYCMD_E_REQUEST, "target must contain only finite values");
        if (tf < 0) break;
        sum += tf;
    }
    /* np.isclose(target.sum(), 1.0, rtol=1e-5, atol=1e-6) on the float32 vector */
    int neg = 0;
    for (size_t i = 0; i < k; i++) neg |= (float)t[i] < 0;
    float fsum = 0;
    for (size_t i = 0; i < k; i++) fsum += (float)t[i];
    (void)sum;
    if (neg || !(fabs((double)fsum - 1.0) <= 1e-6 + 1e-5 * 1.0))
        return sk_fail(e, SKYCMD_E_REQUEST, "target must be a nonnegative probability vector summing to 1");
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 1024;
        sk_calib_rec *r = realloc(s->r, nc * sizeof *r);
        if (!r) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory keeping the records");
        s->r = r;
        s->cap = nc;
    }
    if (s->nv + k > s->vcap) {
        size_t nc = s->vcap ? s->vcap : 4096;
        while (nc < s->nv + k) nc *= 2;
        float *nz = realloc(s->z, nc * sizeof *nz);
        if (!nz) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory keeping the records");
        s->z = nz;
        float *nt = realloc(s->t, nc * sizeof *nt);
        if (!nt) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory keeping the records");
        s->t = nt;
        s->vcap = nc;
    }
    s->r[s->n] = (sk_calib_rec){qt, (uint32_t)k, s->nv};
    for (size_t i = 0; i < k; i++) {
        s->z[s->nv + i] = z[i];
        s->t[s->nv + i] = (float)t[i];
    }
    s->nv += k;
    s->n++;
    return 0;
}

/* ---- the objective, in torch's float32 order ---- */

/* laya's closure, op by op as torch 2.15 evaluates it on the CPU (torch_f32.h):
 *   scale = exp(clamp(log_t)); per width group (narrowest first)
 *   s_g = -(t * log_softmax(z / scale, -1)).sum(-1).sum();  nll = 0 + s_1 + s_2 + ...
 *   loss = nll / n_rows
 * and its autograd backward: d loss / d s_g = -(1 / n_rows) into every row; log_softmax's
 * backward g - exp(out) * sum(g) (one fused multiply-add, as torch's compiled kernel does);
 * the division's d/d scale = -grad * ((z / scale) / scale) summed over the group's n * w
 * elements; the groups' contributions added last group first (the autograd engine runs the
 * most recently created node first); then * scale (exp) and the clamp's mask. */
typedef struct fit_ctx {
    const sk_calib_set *s;
    const size_t *idx;   /* rows sorted by width (stable): laya's _pairs_by_width */
    size_t n;
    float lo, hi;
    float *row_buf, *elem_buf; /* n row sums; the largest group's n * w gradient terms */
    size_t groups;
    float *group_grad;   /* one per width group */
} fit_ctx;

/* torch.exp on the 1-element scale tensor: MKL's vsExp, as modelled in torch_f32.c. */
static float scale_exp(float x) { return sk_tf32_mkl_exp(x); }

static void loss_grad(const fit_ctx *c, float x, float *loss, float *grad) {
    float xc = x < c->lo ? c->lo : x > c->hi ? c->hi : x;
    float scale = scale_exp(xc);
    const float g_nll = 1.0f / (float)c->n; /* DivBackward of nll / n_rows */
    const float g_row = -g_nll;             /* through the negation of the group sum */
    float nll = 0.0f;
    size_t i = 0, g = 0;
    while (i < c->n) {
        uint32_t w = c->s->r[c->idx[i]].k;
        size_t m = 0;
        for (; i < c->n && c->s->r[c->idx[i]].k == w; i++, m++) {
            const sk_calib_rec *r = &c->s->r[c->idx[i]];
            const float *z = c->s->z + r->off, *t = c->s->t + r->off;
            float u[SK_REQUEST_MAX_OPTIONS], ls[SK_REQUEST_MAX_OPTIONS], gl[SK_REQUEST_MAX_OPTIONS];
            for (uint32_t j = 0; j < w; j++) u[j] = z[j] / scale;
            sk_tf32_log_softmax_row(u, w, ls);
            for (uint32_t j = 0; j < w; j++) u[j] = t[j] * ls[j];
            c->row_buf[m] = sk_tf32_sum(u, w);
            for (uint32_t j = 0; j < w; j++) gl[j] = g_row * t[j];
            float gsum = sk_tf32_row_reduce_sum(gl, w);
            float *el = c->elem_buf + (size_t)m * w;
            for (uint32_t j = 0; j < w; j++) {
                float gu = fmaf(-sk_tf32_exp(ls[j]), gsum, gl[j]);
                el[j] = -gu * ((z[j] / scale) / scale);
            }
        }
        float group = -sk_tf32_sum(c->row_buf, m);
        nll = g == 0 ? group : nll + group; /* Python's sum(): 0 + s_1 is s_1 */
        c->group_grad[g++] = sk_tf32_sum(c->elem_buf, m * (size_t)w);
    }
    float gscale = c->group_grad[g - 1];
    for (size_t k = g - 1; k-- > 0;) gscale = gscale + c->group_grad[k];
    *loss = nll / (float)c->n;
    float gx = gscale * scale;
    *grad = (x >= c->lo && x <= c->hi) ? gx : 0.0f;
}

/* torch.optim.LBFGS(lr=0.1, max_iter=100).step(closure) on one parameter; returns log T.
 * Every tensor operation is float32 with one rounding, except Tensor.add_(v, alpha=a),
 * which torch's compiled kernel evaluates as one fused multiply-add; Python-float
 * constants meet float32 tensors as float32; the losses are compared as doubles. */
static float lbfgs(const fit_ctx *c, int *iters) {
    const float lr = 0.1f, tol_grad = (float)1e-7, tol_change_f = (float)1e-9;
    const double tol_change = 1e-9;
    enum { HIST = 100, MAX_ITER = 100 };
    float x = 0.0f, loss, g;
    loss_grad(c, x, &loss, &g);
    int it = 0;
    if (fabsf(g) <= tol_grad) {
        if (iters) *iters = 0;
        return x;
    }
    float dirs[HIST], stps[HIST], ro[HIST], al[HIST];
    int nh = 0;
    float H = 1.0f, d = 0.0f, t = 0.0f, prev_g = 0.0f;
    double prev_loss = 0;
    while (it < MAX_ITER) {
        it++;
        if (it == 1) {
            d = -g;
        } else {
            float y = g - prev_g, s = d * t, ys = y * s;
            if (ys > (float)1e-10) {
                if (nh == HIST) {
                    memmove(dirs, dirs + 1, (HIST - 1) * sizeof *dirs);
                    memmove(stps, stps + 1, (HIST - 1) * sizeof *stps);
                    memmove(ro, ro + 1, (HIST - 1) * sizeof *ro);
                    nh--;
                }
                dirs[nh] = y;
                stps[nh] = s;
                ro[nh] = 1.0f / ys;
                nh++;
                H = ys / (y * y);
            }
            float q = -g;
            for (int i = nh - 1; i >= 0; i--) {
                al[i] = (stps[i] * q) * ro[i];
                q = fmaf(-al[i], dirs[i], q);
            }
            float r = q * H;
            for (int i = 0; i < nh; i++) {
                float be = (dirs[i] * r) * ro[i];
                r = fmaf(al[i] - be, stps[i], r);
            }
            d = r;
        }
        prev_g = g;
        prev_loss = (double)loss;
        if (it == 1) {
            float inv = 1.0f / fabsf(g);
            t = (inv < 1.0f ? inv : 1.0f) * lr;
        } else {
            t = lr;
        }
        float gtd = g * d;
        if (gtd > -tol_change_f) break;
        x = fmaf(t, d, x);
        if (it != MAX_ITER) loss_grad(c, x, &loss, &g);
        if (it == MAX_ITER) break;
        if (fabsf(g) <= tol_grad) break;
        if (fabsf(d * t) <= tol_change_f) break;
        if (fabs((double)loss - prev_loss) < tol_change) break;
    }
    if (iters) *iters = it;
    return x;
}

static int by_width(const void *a, const void *b, const sk_calib_set *s) {
    uint32_t ka = s->r[*(const size_t *)a].k, kb = s->r[*(const size_t *)b].k;
    return ka < kb ? -1 : ka > kb;
}

double sk_calib_fit_one(const sk_calib_set *s, const size_t *idx, size_t n, size_t min_n, int *iters) {
    if (iters) *iters = 0;
    if (n < min_n || n == 0) return 1.0;
    size_t *sorted = sk_malloc_array(n, sizeof *sorted);
    if (!sorted) return NAN;
    memcpy(sorted, idx, n * sizeof *sorted);
    /* stable insertion by width (widths are few; rows keep their order within a width) */
    for (size_t i = 1; i < n; i++) {
        size_t v = sorted[i], j = i;
        while (j > 0 && by_width(&sorted[j - 1], &v, s) > 0) {
            sorted[j] = sorted[j - 1];
            j--;
        }
        sorted[j] = v;
    }
    /* buffers for one evaluation: row sums, a group's n * w gradient terms, group grads */
    size_t max_w = 0, groups = 0;
    for (size_t i = 0; i < n; i++) {
        size_t w = s->r[sorted[i]].k;
        if (w > max_w) max_w = w;
        if (i == 0 || w != s->r[sorted[i - 1]].k) groups++;
    }
    fit_ctx c = {s, sorted, n, 0, 0, NULL, NULL, groups, NULL};
    c.lo = (float)(log(0.5) - 10.0);
    c.hi = (float)(log(5.0) + 10.0);
    c.row_buf = sk_malloc_array(n, sizeof *c.row_buf);
    c.elem_buf = max_w <= SIZE_MAX / n ? sk_malloc_array(n * max_w, sizeof *c.elem_buf) : NULL;
    c.group_grad = sk_malloc_array(groups, sizeof *c.group_grad);
    if (!c.row_buf || !c.elem_buf || !c.group_grad) {
        free(c.row_buf);
        free(c.elem_buf);
        free(c.group_grad);
        free(sorted);
        return NAN;
    }
    float x = lbfgs(&c, iters);
    free(c.row_buf);
    free(c.elem_buf);
    free(c.group_grad);
    free(sorted);
    float xc = x < c.lo ? c.lo : x > c.hi ? c.hi : x;
    return (double)scale_exp(xc);
}

void sk_calib_fit_temperatures(const sk_calib_set *s, sk_calib_fit *f) {
    memset(f, 0, sizeof *f);
    size_t *idx = sk_malloc_array(s->n ? s->n : 1, sizeof *idx);
    for (int b = 0; b < SK_CALIB_BUCKETS; b++) f->bucket_raw[b] = NAN;
    int seen[SK_CALIB_BUCKETS] = {0};
    for (size_t i = 0; i < s->n; i++) {
        int b = sk_calib_bucket(s->r[i].qt, s->r[i].k);
        f->bucket_n[b]++;
        if (!seen[b]) {
            seen[b] = 1;
            f->bucket_order[f->n_buckets_seen++] = b;
        }
    }
    for (int qt = 0; qt < 3; qt++) {
        f->temperature[qt] = 1.0;
        f->type_raw[qt] = NAN;
        size_t n = 0;
        for (size_t i = 0; idx && i < s->n; i++)
            if (s->r[i].qt == qt) idx[n++] = i;
        f->type_n[qt] = n;
        if (idx && n >= SK_CALIB_MIN_TYPE_N) {
            f->type_raw[qt] = sk_calib_fit_one(s, idx, n, SK_CALIB_MIN_TYPE_N, &f->iterations[qt]);
            f->temperature[qt] = sk_clamp_temperature(f->type_raw[qt]);
        }
    }
    for (int bi = 0; bi < f->n_buckets_seen; bi++) {
        int b = f->bucket_order[bi];
        if (!idx || f->bucket_n[b] < SK_CALIB_MIN_BUCKET_N) continue;
        size_t n = 0;
        for (size_t i = 0; i < s->n; i++)
            if (sk_calib_bucket(s->r[i].qt, s->r[i].k) == b) idx[n++] = i;
        f->bucket_raw[b] = sk_calib_fit_one(s, idx, n, SK_CALIB_MIN_BUCKET_N, &f->iterations[3 + b]);
        f->bucket_t[b] = sk_clamp_temperature(f->bucket_raw[b]);
        f->has_bucket[b] = 1;
    }
    free(idx);
}

void sk_calib_temps_from_fit(const sk_calib_fit *f, sk_calib_temps *t) {
    memset(t, 0, sizeof *t);
    for (int i = 0; i < 3; i++) t->temperature[i] = f->temperature[i];
    for (int b = 0; b < SK_CALIB_BUCKETS; b++) {
        t->has_bucket[b] = f->has_bucket[b];
        t->bucket_t[b] = f->bucket_t[b];
    }
}

void sk_calib_temps_from_model(const sk_temps *mt, sk_calib_temps *t) {
    memset(t, 0, sizeof *t);
    for (int qt = 0; qt < 3; qt++) {
        t->temperature[qt] = isnan(mt->t[qt][0]) ? 1.0 : mt->t[qt][0];
        for (int sz = 1; sz < SK_TEMP_BUCKETS; sz++) {
            int b = qt * 4 + sz - 1;
            t->has_bucket[b] = !isnan(mt->t[qt][sz]);
            t->bucket_t[b] = mt->t[qt][sz];
        }
    }
}

void sk_calib_temps_identity(sk_calib_temps *t) {
    memset(t, 0, sizeof *t);
    for (int i = 0; i < 3; i++) t->temperature[i] = 1.0;
}

static double temp_of(const sk_calib_temps *t, int qt, size_t k) {
    int b = sk_calib_bucket(qt, k);
    return t->has_bucket[b] ? t->bucket_t[b] : t->temperature[qt];
}

/* laya's _softmax (T floored at 1e-3) -> max p, argmax p == argmax target */
static void rec_conf(const sk_calib_set *s, size_t i, double T, double *conf, int *correct) {
    const sk_calib_rec *r = &s->r[i];
    const float *z = s->z + r->off, *t = s->t + r->off;
    double scale = T > 1e-3 ? T : 1e-3, mx = -INFINITY, sum = 0, p[SK_REQUEST_MAX_OPTIONS];
    for (uint32_t j = 0; j < r->k; j++) {
        p[j] = (double)z[j] / scale;
        if (p[j] > mx) mx = p[j];
    }
    for (uint32_t j = 0; j < r->k; j++) {
        p[j] = exp(p[j] - mx);
        sum += p[j];
    }
    size_t best = 0, y = 0;
    for (uint32_t j = 0; j < r->k; j++) {
        p[j] /= sum;
        if (p[j] > p[best]) best = j;
        if (t[j] > t[y]) y = j;
    }
    *conf = p[best];
    *correct = best == y;
}

double sk_calib_ece(const sk_calib_set *s, int qt, const sk_calib_temps *t, size_t *n_out) {
    enum { BINS = 15 };
    size_t cnt[BINS] = {0}, n = 0;
    double sc[BINS] = {0}, sk[BINS] = {0};
    const double step = 1.0 / BINS;
    for (size_t i = 0; i < s->n; i++) {
        if (qt >= 0 && s->r[i].qt != qt) continue;
        double conf;
        int ok;
        rec_conf(s, i, temp_of(t, s->r[i].qt, s->r[i].k), &conf, &ok);
        n++;
        for (int b = 0; b < BINS; b++) { /* np.linspace(0, 1, 16) edges; bin 0 closed */
            double lo = b * step, hi = b == BINS - 1 ? 1.0 : (b + 1) * step;
            if ((b == 0 ? conf >= lo : conf > lo) && conf <= hi) {
                cnt[b]++;
                sc[b] += conf;
                sk[b] += ok;
                break;
            }
        }
    }
    if (n_out) *n_out = n;
    if (!n) return NAN;
    double ece = 0;
    for (int b = 0; b < BINS; b++)
        if (cnt[b])
            ece += ((double)cnt[b] / (double)n) * fabs(sc[b] / (double)cnt[b] - sk[b] / (double)cnt[b]);
    return ece;
}

typedef struct cc { double conf; int ok; } cc;
static int cc_desc(const void *a, const void *b) {
    double x = ((const cc *)a)->conf, y = ((const cc *)b)->conf;
    return x > y ? -1 : x < y;
}

int sk_calib_abstention(const sk_calib_set *s, const sk_calib_temps *t, double target_error,
                        size_t min_n, int conservative, int has[SK_CALIB_BUCKETS],
                        double thr[SK_CALIB_BUCKETS], sk_err *e) {
    if (!(target_error >= 0.0 && target_error <= 1.0))
        return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "target_error must be in [0.0, 1.0], got %g", target_error);
    if (min_n < 1) return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "min_bucket_n must be a positive integer");
    cc *v = sk_malloc_array(s->n ? s->n : 1, sizeof *v);
    if (!v) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory fitting the abstention thresholds");
    for (int b = 0; b < SK_CALIB_BUCKETS; b++) {
        has[b] = 0;
        thr[b] = NAN;
        size_t n = 0;
        for (size_t i = 0; i < s->n; i++) {
            if (sk_calib_bucket(s->r[i].qt, s->r[i].k) != b) continue;
            double conf;
            int ok;
            rec_conf(s, i, temp_of(t, s->r[i].qt, s->r[i].k), &conf, &ok);
            v[n++] = (cc){sk_round4(conf), ok};
        }
        if (n < min_n || n == 0) continue;
        qsort(v, n, sizeof *v, cc_desc);
        /* _select_abstention_threshold: every distinct level, its whole tie group counted */
        size_t acc = 0, err = 0, i = 0;
        int found = 0;
        double best = 0;
        while (i < n) {
            double tau = v[i].conf;
            while (i < n && v[i].conf >= tau) {
                acc++;
                err += !v[i].ok;
                i++;
            }
            double rate = conservative ? ((double)err + 1.0) / ((double)acc + 1.0)
                                       : (double)err / (double)acc;
            if (acc > 0 && rate <= target_error) {
                best = tau;
                found = 1;
            }
        }
        has[b] = 1;
        thr[b] = found ? fmin(1.0, fmax(0.0, best)) : 1.0;
    }
    free(v);
    return 0;
}

/* ---- the GGUF rewrite ---- */

static int temp_key_kind(sk_str k, const char *prefix, size_t pn) {
    /* 0: not ours; 1: a type or type.size key we replace */
    if (k.len <= pn || memcmp(k.ptr, prefix, pn) != 0) return 0;
    const char *suf = k.ptr + pn;
    size_t sl = (size_t)(k.len - pn);
    for (int qt = 0; qt < 3; qt++) {
        size_t tl = strlen(sk_qtype_names[qt]);
        if (sl < tl || memcmp(suf, sk_qtype_names[qt], tl) != 0) continue;
        if (sl == tl) return 1;
        if (suf[tl] != '.') continue;
        for (int b = 1; b < SK_TEMP_BUCKETS; b++)
            if (strlen(sk_temp_bucket_names[b]) == sl - tl - 1 &&
                memcmp(suf + tl + 1, sk_temp_bucket_names[b], sl - tl - 1) == 0)
                return 1;
    }
    return 0;
}

static void put_u32(sk_buf *b, uint32_t v) {
    unsigned char x[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 24)};
    sk_buf_append(b, x, 4);
}
static void put_u64(sk_buf *b, uint64_t v) {
    put_u32(b, (uint32_t)v);
    put_u32(b, (uint32_t)(v >> 32));
}

static void put_temp_kv(sk_buf *b, const char *key, double value) {
    put_u64(b, strlen(key));
    sk_buf_puts(b, key);
    put_u32(b, SK_GGUF_F32);
    float f = (float)value;
    uint32_t u;
    memcpy(&u, &f, 4);
    put_u32(b, u);
}

static void put_new_temps(sk_buf *b, const char *prefix, const sk_calib_temps *t, uint64_t *count) {
    char key[160];
    for (int qt = 0; qt < 3; qt++) {
        snprintf(key, sizeof key, "%s%s", prefix, sk_qtype_names[qt]);
        put_temp_kv(b, key, t->temperature[qt]);
        (*count)++;
    }
    for (int qt = 0; qt < 3; qt++)
        for (int sz = 1; sz < SK_TEMP_BUCKETS; sz++) {
            int bk = qt * 4 + sz - 1;
            if (!t->has_bucket[bk]) continue;
            snprintf(key, sizeof key, "%s%s.%s", prefix, sk_qtype_names[qt], sk_temp_bucket_names[sz]);
            put_temp_kv(b, key, t->bucket_t[bk]);
            (*count)++;
        }
}

int sk_calib_write_gguf(const sk_gguf *g, const char *arch, const sk_calib_temps *t,
                        const char *out_path, sk_err *e) {
    const uint8_t *base = sk_gguf_bytes(g);
    const uint64_t fsize = sk_gguf_file_size(g), data_off = sk_gguf_data_offset(g);
    const size_t nkv = sk_gguf_n_kv(g), nt = sk_gguf_n_tensors(g);
    if (nt == 0) return sk_fail(e, SKYCMD_E_FORMAT, "the model has no tensors");
    char prefix[128];
    int pn = snprintf(prefix, sizeof prefix, "%s.decision.temperature.", arch);
    if (pn <= 0 || (size_t)pn >= sizeof prefix) return sk_fail(e, SKYCMD_E_FORMAT, "architecture name too long");
    /* each KV record runs from its key's length prefix to the next one's; the last one to
     * the first tensor record; the tensor table ends after the last record's offset */
    const sk_gguf_tensor *t0 = sk_gguf_tensor_at(g, 0), *tl = sk_gguf_tensor_at(g, nt - 1);
    const uint64_t ti_start = (uint64_t)((const uint8_t *)t0->name.ptr - base) - 8;
    const uint64_t ti_end = (uint64_t)((const uint8_t *)tl->name.ptr - base) + tl->name.len + 4 +
                            8ull * tl->n_dims + 4 + 8;
    if (ti_end > data_off || ti_start < 24) return sk_fail(e, SKYCMD_E_FORMAT, "unexpected GGUF layout");
    sk_buf b;
    sk_buf_init(&b);
    sk_buf_append(&b, base, 16); /* magic, version, tensor count */
    put_u64(&b, 0);              /* the key count, patched below */
    uint64_t count = 0;
    int placed = 0;
    for (size_t i = 0; i < nkv; i++) {
        sk_str k = sk_gguf_kv_key(g, i);
        uint64_t start = (uint64_t)((const uint8_t *)k.ptr - base) - 8;
        uint64_t end = i + 1 < nkv ? (uint64_t)((const uint8_t *)sk_gguf_kv_key(g, i + 1).ptr - base) - 8
                                   : ti_start;
        if (temp_key_kind(k, prefix, (size_t)pn)) {
            if (!placed) put_new_temps(&b, prefix, t, &count);
            placed = 1;
            continue;
        }
        sk_buf_append(&b, base + start, (size_t)(end - start));
        count++;
    }
    if (!placed) put_new_temps(&b, prefix, t, &count);
    sk_buf_append(&b, base + ti_start, (size_t)(ti_end - ti_start));
    uint64_t align = sk_gguf_alignment(g);
    while (b.len % align) sk_buf_putc(&b, 0);
    if (b.failed) {
        sk_buf_free(&b);
        return sk_fail(e, SKYCMD_E_NOMEM, "out of memory writing %s", out_path);
    }
    for (int i = 0; i < 8; i++) b.data[16 + i] = (char)(unsigned char)(count >> (8 * i));
    sk_atomic_file f;
    int rc = sk_atomic_open(&f, out_path, e);
    if (!rc) rc = sk_atomic_write(&f, b.data, b.len, e);
    if (!rc) rc = sk_atomic_write(&f, base + data_off, (size_t)(fsize - data_off), e);
    rc = sk_atomic_close(&f, rc, e);
    sk_buf_free(&b);
    return rc;
}
