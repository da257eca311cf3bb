/*
 * test_int8_attrib.c - per-site error attribution of the int8 method (issue 19): which
 * matrix products ("sites": each encoder layer's attn_qkv, attn_output, ffn_up, ffn_down;
 * the decision head, the scorer and the token embeddings are not int8, see
 * docs/quantization.md) the int8 error comes from, and whether from the weights or from the
 * activations.
 *
 * Method: the same file is opened three times, f32 (A), calibrated int8 (--q8, Q) and plain
 * int8 (no calibration, P). One site at a time is then made int8 inside A, by pointing A's
 * Linear at Q's (or P's) int8 weights, or at f32 panels holding exactly the values those
 * int8 weights stand for (the Q8_0 blocks dequantized, outlier columns exact):
 *   W      weights only: A with the site's dequantized int8 weights, f32 activations;
 *   A8x2   activations only (two-pass): the W model plus the int8 product at the site, against
 *          the W model (same weight values, so only the activation rounding differs);
 *   A8     the same with single-pass activations (at the sites whose int8 weights keep
 *          two-pass activations under --q8-fast, sk_q8_owned.fast_x2, it equals A8x2);
 *   both   A with the site's int8 product (Q8x2 and Q8), against A;
 *   l.o.o. every site int8 except this one (Q8x2): what keeping it f32 would buy.
 * Errors are max and mean |dp| over every probability of every request, against A. A
 * consistency check makes the method testable: A with every site pointed at Q's weights
 * must answer bit for bit like Q itself.
 *
 * Models: the built-in trained s1-pico-flappy on its committed test set, and the golden
 * checkpoints made with laya's and transformers' own classes on the golden requests. The
 * tables go to stderr and <build>/int8-attrib-report.txt (docs/quantization.md quotes them).
 * SKYCMD_ATTRIB_MODELS=flappy,laya-4x-f16-padded,... limits the models. What ctest runs is the
 * consistency check on every model (its only assertion; seconds); the tables (minutes: about
 * 60 s of CPU for the flappy model's 2,000 states x 6 variants x each site) are made only
 * with SKYCMD_ATTRIB_REPORT=1.
 */
#define _POSIX_C_SOURCE 200809L /* mkdtemp (test_util.h) */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "skycmd.h"
#include "test_util.h"
#include "api/handles.h"
#include "model/model_internal.h"

/* ------------------------------------------------------------------ requests and answers */

typedef struct bodies {
    size_t n;
    char **b;
} bodies;

static void bodies_free(bodies *b) {
    for (size_t i = 0; i < b->n; i++) free(b->b[i]);
    free(b->b);
    memset(b, 0, sizeof *b);
}

static void bodies_push(bodies *b, const char *s) {
    b->b = realloc(b->b, (b->n + 1) * sizeof *b->b);
    cr_assert_not_null(b->b);
    b->b[b->n++] = strdup(s);
}

static void flappy_bodies(bodies *out) {
    memset(out, 0, sizeof *out);
    size_t len = 0;
    char *text = tu_read_file(SKYCMD_FIXTURES "/flappy/test.jsonl", &len);
    cr_assert_not_null(text);
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        cJSON *r = cJSON_Parse(line);
        cr_assert_not_null(r);
        cJSON *req = cJSON_CreateObject();
        cJSON_AddItemToObject(req, "state", cJSON_Duplicate(cJSON_GetObjectItem(r, "state"), 1));
        cJSON_AddItemToObject(req, "questions", cJSON_Duplicate(cJSON_GetObjectItem(r, "questions"), 1));
        char *s = cJSON_PrintUnformatted(req);
        bodies_push(out, s);
        cJSON_free(s);
        cJSON_Delete(req);
        cJSON_Delete(r);
    }
    free(text);
}

static void golden_bodies(bodies *out) {
    memset(out, 0, sizeof *out);
    cJSON *reqs = tu_load_json(SKYCMD_FIXTURES "/golden/requests.json");
    cr_assert_not_null(reqs);
    const cJSON *rq;
    cJSON_ArrayForEach(rq, reqs) {
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rq, "expect_error"))) continue;
        bodies_push(out, cJSON_GetObjectItemCaseSensitive(rq, "body")->valuestring);
    }
    cJSON_Delete(reqs);
}

/* Every probability of every answer, flat, and where each question's options start. */
typedef struct answers {
    size_t n, nq;
    double *p;
    size_t *q_off, *q_len;
} answers;

static void answers_free(answers *a) {
    free(a->p);
    free(a->q_off);
    free(a->q_len);
    memset(a, 0, sizeof *a);
}

static void answer_all(skycmd_model *m, int acts, const bodies *b, answers *out) {
    memset(out, 0, sizeof *out);
    size_t cap = 1024, qcap = 256;
    out->p = malloc(cap * sizeof *out->p);
    out->q_off = malloc(qcap * sizeof *out->q_off);
    out->q_len = malloc(qcap * sizeof *out->q_len);
    skycmd_session *s = NULL;
    cr_assert_eq(skycmd_session_new(m, &s), 0);
    if (acts >= 0) cr_assert_eq(skycmd_session_set_int(s, SKYCMD_OPT_ACTIVATIONS, acts), 0);
    for (size_t i = 0; i < b->n; i++) {
        skycmd_request *req = NULL;
        cr_assert_eq(skycmd_request_parse(b->b[i], strlen(b->b[i]), &req), 0);
        skycmd_response *r = NULL;
        cr_assert_eq(skycmd_decide(s, req, &r), 0, "%s", skycmd_session_errmsg(s));
        for (size_t q = 0; q < skycmd_response_answer_count(r); q++) {
            const size_t k = skycmd_response_option_count(r, q);
            if (out->nq == qcap) {
                qcap *= 2;
                out->q_off = realloc(out->q_off, qcap * sizeof *out->q_off);
                out->q_len = realloc(out->q_len, qcap * sizeof *out->q_len);
            }
            out->q_off[out->nq] = out->n;
            out->q_len[out->nq++] = k;
            for (size_t j = 0; j < k; j++) {
                if (out->n == cap) {
                    cap *= 2;
                    out->p = realloc(out->p, cap * sizeof *out->p);
                }
                out->p[out->n++] = skycmd_response_option_probability(r, q, j);
            }
        }
        skycmd_response_free(r);
        skycmd_request_free(req);
    }
    skycmd_session_free(s);
}

typedef struct cmp {
    double max, mean, agree; /* agree: share of questions with the same top option */
    size_t at;               /* index of the largest |dp| */
} cmp;

static size_t top(const answers *a, size_t q) {
    size_t best = 0;
    for (size_t j = 1; j < a->q_len[q]; j++)
        if (a->p[a->q_off[q] + j] > a->p[a->q_off[q] + best]) best = j;
    return best;
}

static cmp compare(const answers *ref, const answers *x) {
    cr_assert_eq(ref->n, x->n);
    cmp c = {0, 0, 0, 0};
    double sum = 0;
    for (size_t i = 0; i < ref->n; i++) {
        const double d = fabs(x->p[i] - ref->p[i]);
        if (d > c.max || d != d) {
            c.max = d;
            c.at = i;
        }
        sum += d;
    }
    size_t same = 0;
    for (size_t q = 0; q < ref->nq; q++) same += top(ref, q) == top(x, q);
    c.mean = ref->n ? sum / (double)ref->n : 0;
    c.agree = ref->nq ? (double)same / (double)ref->nq : 1;
    return c;
}

/* ------------------------------------------------------------------ sites */

static FILE *g_report;

static void out(const char *fmt, ...) {
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fputs(line, stderr);
    if (g_report) fputs(line, g_report);
}

#define MAX_SITES 256
typedef struct site {
    char name[64];
    sk_linear *a, *q, *p; /* the Linear in the f32, calibrated and plain (or NULL) models */
} site;

static size_t model_sites(skycmd_model *A, skycmd_model *Q, skycmd_model *P, site *s) {
    size_t n = 0;
    static const char *const kind[4] = {"attn_qkv", "attn_output", "ffn_up", "ffn_down"};
    for (uint32_t l = 0; l < A->m->hp.n_layer; l++) {
        sk_linear *la[4] = {&A->m->enc[l].qkv, &A->m->enc[l].out, &A->m->enc[l].up, &A->m->enc[l].down};
        sk_linear *lq[4] = {&Q->m->enc[l].qkv, &Q->m->enc[l].out, &Q->m->enc[l].up, &Q->m->enc[l].down};
        for (int k = 0; k < 4; k++) {
            if (!lq[k]->q8) continue;
            snprintf(s[n].name, sizeof s[n].name, "blk.%u.%s", l, kind[k]);
            s[n].a = la[k];
            s[n].q = lq[k];
            if (P) {  /* the plain model (the report only) */
                sk_linear *lp[4] = {&P->m->enc[l].qkv, &P->m->enc[l].out, &P->m->enc[l].up,
                                    &P->m->enc[l].down};
                cr_assert_not_null(lp[k]->q8);
                s[n].p = lp[k];
            }
            n++;
        }
    }
    return n;
}

/* The values an int8 Linear stands for, as f32 panels for the f32 GEMM: each Q8_0 block's
 * quants times its scale (read back from the kernels' panels: quants [8][16][4], then the 16
 * f16 scales), the outlier columns with their exact weights. 64-byte aligned, for free(). */
static float *dequant_panels(const sk_q8_weights *w) {
    const size_t n_in = w->p.n_in, n_out = w->p.n_out, nb = n_in / 32;
    float *W = calloc(n_out * n_in, sizeof *W);
    cr_assert_not_null(W);
    for (size_t o = 0; o < n_out; o++) {
        const size_t p = o / SK_Q8_PANEL, c = o % SK_Q8_PANEL;
        for (size_t b = 0; b < nb; b++) {
            const uint8_t *chunk = w->p.panels + (p * nb + b) * SK_Q8_CHUNK;
            const uint16_t dh = (uint16_t)(chunk[SK_Q8_CHUNK_SCALES + 2 * c] |
                                           chunk[SK_Q8_CHUNK_SCALES + 2 * c + 1] << 8);
            const float d = sk_f16_to_f32(dh);
            for (size_t j = 0; j < 8; j++)
                for (size_t t = 0; t < 4; t++)
                    W[o * n_in + b * 32 + j * 4 + t] = d * (float)(int8_t)chunk[(j * 16 + c) * 4 + t];
        }
        for (size_t k = 0; k < w->n_outl; k++) W[o * n_in + w->outl[k]] = w->w_outl[o * w->n_outl + k];
    }
    const size_t nf = sk_packed_floats(n_out, n_in);
    float *packed = aligned_alloc(64, (nf * sizeof(float) + 63) / 64 * 64);
    cr_assert_not_null(packed);
    sk_pack(W, n_in, n_out, n_in, packed);
    free(W);
    return packed;
}

/* Make site s of A int8 in the given way; undo restores it. */
typedef struct saved {
    sk_packed p;
    sk_q8_owned *q8;
} saved;

static saved site_save(const site *s) { return (saved){s->a->p, s->a->q8}; }
static void site_restore(const site *s, saved v) {
    s->a->p = v.p;
    s->a->q8 = v.q8;
}
static void site_weights(const site *s, const float *panels) {
    s->a->p.data = panels;
    s->a->p.wtype = SK_PACK_F32;
    s->a->p.pstride = s->a->p.n_in * SK_PANEL;
}
static void site_int8(const site *s, sk_q8_owned *q8) { s->a->q8 = q8; }

static void on_log(void *ud, int level, const char *msg) {
    (void)ud;
    (void)level;
    if (strstr(msg, "sensitivity") || strstr(msg, "rounding:") || strstr(msg, "int8: calibrated") ||
        (level >= 1 && strstr(msg, "matrices Q8_0")))
        out("  [load] %s\n", msg);
}

static skycmd_model *open_mode(const char *path, int weights) {
    skycmd_options *o = skycmd_options_new();
    skycmd_error *err = skycmd_error_new();
    cr_assert_eq(skycmd_options_set_int(o, SKYCMD_OPT_WEIGHTS, weights), 0);
    if (weights == SKYCMD_WEIGHTS_Q8) skycmd_options_set_log(o, on_log, NULL);
    skycmd_model *m = NULL;
    cr_assert_eq(skycmd_model_open(path, o, &m, err), 0, "%s: %s", path, skycmd_error_message(err));
    skycmd_options_free(o);
    skycmd_error_free(err);
    return m;
}

static void row(const char *name, const char *what, cmp c) {
    out("  %-22s %-10s max %.2e  mean %.2e  same top option %.2f %%\n", name, what, c.max, c.mean,
        100.0 * c.agree);
}

/* SKYCMD_ATTRIB_REPORT=1: the whole attribution (every whole-model row and the per-site
 * table); otherwise only what is asserted. */
static int full_report(void) {
    const char *v = getenv("SKYCMD_ATTRIB_REPORT");
    return v && v[0] && strcmp(v, "0") != 0;
}

/* The consistency check of one model over one request set (A with every site pointed at Q's
 * int8 weights answers bit for bit like Q), and with SKYCMD_ATTRIB_REPORT the attribution. */
static void attribute(const char *label, const char *path, const bodies *b) {
    const int report = full_report();
    skycmd_model *A = open_mode(path, SKYCMD_WEIGHTS_F32), *Q = open_mode(path, SKYCMD_WEIGHTS_Q8),
                 *P = report ? open_mode(path, SKYCMD_WEIGHTS_Q8_PLAIN) : NULL;
    /* On AMX CPUs the int8 modes run their float matrices (the decision head, the encoder
     * sites kept in f32) on bf16x3 tiles (bf16x3.c); the f32 model gets the same here (all
     * its encoder matrices: each site's f32 reference is then the bf16x3 product, ~1e-5
     * relative, far below int8's error), so every difference measured below is the int8
     * sites' and the consistency check below stays exact. A no-op elsewhere. */
    {
        sk_err he = {0};
        cr_assert_eq(sk_model_int8_floats_to_amx_bf16(A->m, NULL, NULL, &he), 0);
    }
    site *sites = calloc(MAX_SITES, sizeof *sites);
    const size_t ns = model_sites(A, Q, P, sites);
    cr_assert_gt(ns, 0, "%s: no int8 site", label);
    answers ref, full[4], tmp, wref;
    answer_all(Q, SKYCMD_ACT_Q8X2, b, &full[0]);
    /* consistency: A with every site on Q's int8 weights answers like Q */
    saved *sv = calloc(ns, sizeof *sv);
    for (size_t i = 0; i < ns; i++) {
        sv[i] = site_save(&sites[i]);
        site_int8(&sites[i], sites[i].q->q8);
    }
    answer_all(A, SKYCMD_ACT_Q8X2, b, &tmp);
    cr_assert_eq(memcmp(tmp.p, full[0].p, tmp.n * sizeof *tmp.p), 0,
                 "%s: the f32 model with every site on the int8 weights does not answer like --q8", label);
    answers_free(&tmp);
    for (size_t i = 0; i < ns; i++) site_restore(&sites[i], sv[i]);
    out("\n== %s: %zu requests, %zu int8 sites: the f32 model with every site on the --q8 "
        "weights answers like --q8, bit for bit\n", label, b->n, ns);
    if (!report) goto done;

    answer_all(A, -1, b, &ref);
    answer_all(Q, SKYCMD_ACT_Q8, b, &full[1]);
    answer_all(P, SKYCMD_ACT_Q8X2, b, &full[2]);
    answer_all(P, SKYCMD_ACT_Q8, b, &full[3]);
    out("  %zu questions, %zu probabilities\n", ref.nq, ref.n);
    const cmp whole = compare(&ref, &full[0]);
    row("all sites", "--q8", whole);
    row("all sites", "--q8-fast", compare(&ref, &full[1]));
    row("all sites", "plain Q8x2", compare(&ref, &full[2]));
    row("all sites", "plain Q8", compare(&ref, &full[3]));
    /* what every site contributes at the worst probability of --q8 */
    out("  worst --q8 probability: #%zu (f32 %.4f, --q8 %.4f)\n", whole.at, ref.p[whole.at],
        full[0].p[whole.at]);
    out("  per site (alone, against f32; W = weights only, A = activations only, both = int8 product;\n"
        "  l.o.o. = every other site int8; dp@worst = the site's signed dp at that probability):\n");
    out("  %-22s %-21s %-21s %-21s %-21s %-21s %-21s %-21s %s\n", "site", "W calib max/mean",
        "W plain max/mean", "A8x2 max/mean", "A8 max/mean", "both Q8x2 max/mean", "both Q8 max/mean",
        "l.o.o. Q8x2 max/mean", "dp@worst");
    for (size_t i = 0; i < ns; i++) {
        const site *s = &sites[i];
        cmp c[7];
        double at_worst;
        saved v = site_save(s);
        float *wq = dequant_panels(&s->q->q8->w), *wp = dequant_panels(&s->p->q8->w);
        site_weights(s, wq);
        answer_all(A, -1, b, &wref);
        c[0] = compare(&ref, &wref);
        site_weights(s, wp);
        answer_all(A, -1, b, &tmp);
        c[1] = compare(&ref, &tmp);
        answers_free(&tmp);
        site_restore(s, v);
        site_weights(s, wq);
        site_int8(s, s->q->q8);
        answer_all(A, SKYCMD_ACT_Q8X2, b, &tmp);
        c[2] = compare(&wref, &tmp);
        answers_free(&tmp);
        answer_all(A, SKYCMD_ACT_Q8, b, &tmp);
        c[3] = compare(&wref, &tmp);
        answers_free(&tmp);
        site_restore(s, v);
        site_int8(s, s->q->q8);
        answer_all(A, SKYCMD_ACT_Q8X2, b, &tmp);
        c[4] = compare(&ref, &tmp);
        at_worst = tmp.p[whole.at] - ref.p[whole.at];
        answers_free(&tmp);
        answer_all(A, SKYCMD_ACT_Q8, b, &tmp);
        c[5] = compare(&ref, &tmp);
        answers_free(&tmp);
        site_restore(s, v);
        for (size_t j = 0; j < ns; j++)
            if (j != i) site_int8(&sites[j], sites[j].q->q8);
        answer_all(A, SKYCMD_ACT_Q8X2, b, &tmp);
        c[6] = compare(&ref, &tmp);
        answers_free(&tmp);
        for (size_t j = 0; j < ns; j++) site_restore(&sites[j], sv[j]);
        out("  %-22s", s->name);
        for (int k = 0; k < 7; k++) out(" %.2e/%.2e   ", c[k].max, c[k].mean);
        out(" %+.2e\n", at_worst);
        answers_free(&wref);
        free(wq);
        free(wp);
    }
    for (int k = 1; k < 4; k++) answers_free(&full[k]);
    answers_free(&ref);
done:
    free(sv);
    answers_free(&full[0]);
    free(sites);
    skycmd_model_free(A);
    skycmd_model_free(Q);
    skycmd_model_free(P);
}

static int wanted(const char *name) {
    const char *w = getenv("SKYCMD_ATTRIB_MODELS");
    if (!w || !w[0]) return 1;
    const size_t n = strlen(name);
    for (const char *p = strstr(w, name); p; p = strstr(p + 1, name))
        if ((p == w || p[-1] == ',') && (p[n] == ',' || p[n] == 0)) return 1;
    return 0;
}

static void open_report(void) {
    g_report = fopen(SKYCMD_BINARY_DIR "/int8-attrib-report.txt", "a");
}
static void close_report(void) {
    if (g_report) fclose(g_report);
    g_report = NULL;
}

Test(int8_attrib, flappy, .timeout = 1800, .init = open_report, .fini = close_report) {
    if (!wanted("flappy")) {
        cr_skip("SKYCMD_ATTRIB_MODELS leaves out flappy");
        return;
    }
    bodies b;
    flappy_bodies(&b);
    attribute("s1-pico-flappy (models/s1-pico-flappy.gguf, F16) on tests/fixtures/flappy/test.jsonl",
              SKYCMD_SOURCE_DIR "/models/s1-pico-flappy.gguf", &b);
    bodies_free(&b);
}

static void golden_ckpt(const char *name) {
    if (!wanted(name)) {
        cr_skip("SKYCMD_ATTRIB_MODELS leaves out %s", name);
        return;
    }
    char dir[1024], path[1200], ckpt[1024], label[300];
    snprintf(ckpt, sizeof ckpt, "%s/golden/ckpt/%s", SKYCMD_FIXTURES, name);
    tu_scratch_make(dir, sizeof dir, "attrib", name);
    snprintf(path, sizeof path, "%s/model-f16.gguf", dir);
    skycmd_options *o = skycmd_options_new();
    skycmd_error *err = skycmd_error_new();
    cr_assert_eq(skycmd_options_set_int(o, SKYCMD_OPT_TYPE, SKYCMD_TYPE_F16), 0);
    cr_assert_eq(skycmd_convert(ckpt, path, o, err), 0, "%s", skycmd_error_message(err));
    skycmd_options_free(o);
    skycmd_error_free(err);
    bodies b;
    golden_bodies(&b);
    snprintf(label, sizeof label, "%s (F16 conversion) on the golden requests", name);
    attribute(label, path, &b);
    bodies_free(&b);
    tu_scratch_remove();
}

Test(int8_attrib, laya_4x_f16_padded, .timeout = 900, .init = open_report, .fini = close_report) {
    golden_ckpt("laya-4x-f16-padded");
}
Test(int8_attrib, laya_5x_f32_d128, .timeout = 900, .init = open_report, .fini = close_report) {
    golden_ckpt("laya-5x-f32-d128");
}
Test(int8_attrib, laya_5x_bf16_odd, .timeout = 900, .init = open_report, .fini = close_report) {
    golden_ckpt("laya-5x-bf16-odd");
}
Test(int8_attrib, laya_parallel, .timeout = 900, .init = open_report, .fini = close_report) {
    golden_ckpt("laya-parallel");
}
