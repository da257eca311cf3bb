/*
 * test_quant_golden.c - the int8 paths against the Python Laya runtime (the golden fixtures
 * of test_golden.c: tests/fixtures/golden, made by tools/golden/make_golden.py).
 *
 * Each model is regenerated with skycmd_random_model() as a Laya directory (test_golden.c
 * checks its SHA-256 against the manifest, so generator drift fails there by name), converted
 * to GGUF, opened with an int8 weights mode and asked every request the fixture answers.
 * Bounds on max |p - p_python| over every probability (issue 5, seed "How much accuracy does
 * each format cost?"):
 *   Q8_0 quantized at load from F16 and from F32, Q8x2 activations, outlier columns  2e-2
 *   Q8_0 GGUF file (plain blocks), Q8x2 activations                                  3e-2
 *   Q8_0 at load, single-pass Q8 activations                                         4e-2
 *   row-scaled int8 at load (SKYCMD_WEIGHTS_Q8_ROW: the head's blocks too), two-pass
 *   row activations                                                                  TOL_ROW
 *   the same with one-pass row activations (the built-in models)                     TOL_ROW_FAST
 * and, on the model with planted massive channels, plain at-load Q8_0 (no calibration, no
 * outlier columns) must be measurably worse than the outlier path (both printed).
 * The recommended int8 (--int8: row-scaled, one pass but at the probe's sites) must also be
 * at or below ONNX Runtime's dynamic int8 on every model in max |dp|, and at or below half
 * of it in mean: ORT's
 * figures are a fixture (ort-int8.json, tools/golden/make_ort_int8_golden.py: laya's model
 * exported, quantize_dynamic, every golden request laya answers, against laya fp32).
 * Measured figures go to stderr and <build>/quant-golden-report.txt (docs/quantization.md).
 */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "skycmd.h"
#include "test_util.h"

/* SKYCMD_GOLDEN_DIR overrides the fixture directory (e.g. fixtures regenerated elsewhere
 * with make_golden.py --out DIR while the committed ones are being updated). */
static const char *golden_dir(void) {
    const char *d = getenv("SKYCMD_GOLDEN_DIR");
    return d && d[0] ? d : SKYCMD_FIXTURES "/golden";
}

typedef struct gm {
    char preset[32], fixture[128];
    int64_t seed, massive;
} gm;

static void find_model(const char *name, gm *m) {
    char mpath[1024];
    snprintf(mpath, sizeof mpath, "%s/manifest.json", golden_dir());
    cJSON *man = tu_load_json(mpath);
    const cJSON *it;
    int found = 0;
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(man, "models")) {
        if (strcmp(cJSON_GetObjectItemCaseSensitive(it, "model")->valuestring, name) != 0) continue;
        snprintf(m->preset, sizeof m->preset, "%s",
                 cJSON_GetObjectItemCaseSensitive(it, "preset")->valuestring);
        snprintf(m->fixture, sizeof m->fixture, "%s",
                 cJSON_GetObjectItemCaseSensitive(it, "fixture")->valuestring);
        m->seed = (int64_t)cJSON_GetObjectItemCaseSensitive(it, "seed")->valuedouble;
        m->massive = (int64_t)cJSON_GetObjectItemCaseSensitive(it, "massive")->valuedouble;
        cr_assert(!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(it, "temperature_overrides")),
                  "%s: temperature overrides are not handled here", name);
        found = 1;
    }
    cJSON_Delete(man);
    cr_assert(found, "model %s is not in the golden manifest", name);
}

/* Laya directory + GGUF files of the requested types in a fresh temporary directory. */
static void make_model(const char *name, const gm *m, char *dir, size_t cap) {
    tu_scratch_make(dir, cap, "qgolden", name);
    char laya[1100];
    snprintf(laya, sizeof laya, "%s/laya", dir);
    skycmd_options *o = skycmd_options_new();
    skycmd_error *err = skycmd_error_new();
    skycmd_options_set_int(o, SKYCMD_OPT_SEED, m->seed);
    skycmd_options_set_int(o, SKYCMD_OPT_MASSIVE, m->massive);
    skycmd_options_set_int(o, SKYCMD_OPT_LAYOUT, SKYCMD_LAYOUT_LAYA);
    int st = skycmd_random_model(m->preset, laya, o, err);
    cr_assert_eq(st, SKYCMD_OK, "%s: %s", name, skycmd_error_message(err));
    skycmd_options_free(o);
    skycmd_error_free(err);
}

static void convert(const char *dir, int type, char *out, size_t cap) {
    char laya[1100];
    snprintf(laya, sizeof laya, "%s/laya", dir);
    snprintf(out, cap, "%s/model-%d.gguf", dir, type);
    if (access(out, F_OK) == 0) return;
    skycmd_options *o = skycmd_options_new();
    skycmd_error *err = skycmd_error_new();
    skycmd_options_set_int(o, SKYCMD_OPT_TYPE, type);
    int st = skycmd_convert(laya, out, o, err);
    cr_assert_eq(st, SKYCMD_OK, "convert type %d: %s", type, skycmd_error_message(err));
    skycmd_options_free(o);
    skycmd_error_free(err);
}

typedef struct logcount {
    int relayouts;
    char summary[512];
} logcount;

static void on_log(void *ud, int level, const char *msg) {
    logcount *c = ud;
    if (strstr(msg, "INPUT_BLOCK_MAJOR") && strstr(msg, "bytes")) c->relayouts++;
    if (level >= 1 && strncmp(msg, "int8:", 5) == 0) snprintf(c->summary, sizeof c->summary, "%s", msg);
}

/* Max |p - p_python| over every probability of every request laya answers (and, in *mean,
 * the mean of |p - p_python|: steadier than the maximum for comparing two paths). */
static double run(const gm *m, const char *gguf, int weights, int act, int expect_relayout,
                  double *mean) {
    skycmd_options *o = skycmd_options_new();
    skycmd_error *err = skycmd_error_new();
    logcount lc = {0, ""};
    skycmd_options_set_int(o, SKYCMD_OPT_WEIGHTS, weights);
    skycmd_options_set_log(o, on_log, &lc);
    skycmd_model *model = NULL;
    int st = skycmd_model_open(gguf, o, &model, err);
    cr_assert_eq(st, SKYCMD_OK, "open %s: %s", gguf, skycmd_error_message(err));
    if (expect_relayout)
        cr_assert_gt(lc.relayouts, 0, "no relayout to kernel order was reported");
    if (lc.summary[0]) fprintf(stderr, "  %s\n", lc.summary);
    skycmd_session *sess = NULL;
    cr_assert_eq(skycmd_session_new(model, &sess), SKYCMD_OK);
    cr_assert_eq(skycmd_session_set_int(sess, SKYCMD_OPT_ACTIVATIONS, act), SKYCMD_OK);
    char fpath[512];
    snprintf(fpath, sizeof fpath, "%s/%s", golden_dir(), m->fixture);
    char rpath[1024];
    snprintf(rpath, sizeof rpath, "%s/requests.json", golden_dir());
    cJSON *fx = tu_load_json(fpath), *reqs = tu_load_json(rpath);
    const cJSON *rq = reqs->child, *cs = cJSON_GetObjectItemCaseSensitive(fx, "cases")->child;
    double max_dp = 0, sum_dp = 0;
    size_t n_prob = 0, n_req = 0;
    for (; rq && cs; rq = rq->next, cs = cs->next) {
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rq, "expect_error"))) continue;
        const char *body = cJSON_GetObjectItemCaseSensitive(rq, "body")->valuestring;
        skycmd_request *req = NULL;
        cr_assert_eq(skycmd_request_parse(body, strlen(body), &req), SKYCMD_OK);
        skycmd_response *resp = NULL;
        st = skycmd_decide(sess, req, &resp);
        cr_assert_eq(st, SKYCMD_OK, "decide: %s", skycmd_session_errmsg(sess));
        size_t qi = 0;
        const cJSON *q;
        cJSON_ArrayForEach(q, cJSON_GetObjectItemCaseSensitive(cs, "questions")) {
            const cJSON *probs = cJSON_GetObjectItemCaseSensitive(q, "probabilities");
            size_t k = (size_t)cJSON_GetArraySize(probs);
            cr_assert_eq(skycmd_response_option_count(resp, qi), k);
            for (size_t j = 0; j < k; j++) {
                double d = fabs(skycmd_response_option_probability(resp, qi, j) -
                                cJSON_GetArrayItem(probs, (int)j)->valuedouble);
                if (d > max_dp || d != d) max_dp = d;
                sum_dp += d;
                n_prob++;
            }
            qi++;
        }
        n_req++;
        skycmd_response_free(resp);
        skycmd_request_free(req);
    }
    cr_assert_geq(n_req, 40, "fewer than 40 requests compared");
    cJSON_Delete(fx);
    cJSON_Delete(reqs);
    skycmd_session_free(sess);
    cr_assert_eq(skycmd_model_free(model), SKYCMD_OK);
    skycmd_options_free(o);
    skycmd_error_free(err);
    if (mean) *mean = n_prob ? sum_dp / (double)n_prob : 0.0;
    return max_dp;
}

static void report(const char *model, const char *path, double v, double mean, double bound) {
    char line[400];
    snprintf(line, sizeof line, "quant-golden %-16s %-36s max|dp| %.4g (bound %.0e)  mean|dp| %.3g\n",
             model, path, v, bound, mean);
    fputs(line, stderr);
    FILE *f = fopen(SKYCMD_BINARY_DIR "/quant-golden-report.txt", "a");
    if (f) {
        fputs(line, f);
        fclose(f);
    }
}

/* ONNX Runtime dynamic int8's max and mean |dp| against laya fp32 on model name (the
 * fixture ort-int8.json); 0 when the fixture has no figure for it (laya's ONNX agent takes
 * no option_layout "parallel" checkpoint). */
static int ort_int8(const char *name, double *max, double *mean) {
    char path[1024];
    snprintf(path, sizeof path, "%s/ort-int8.json", golden_dir());
    cJSON *fx = tu_load_json(path);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(fx, "models"), name);
    const int found = cJSON_IsObject(m);
    if (found) {
        *max = cJSON_GetObjectItemCaseSensitive(m, "max")->valuedouble;
        *mean = cJSON_GetObjectItemCaseSensitive(m, "mean")->valuedouble;
        cr_assert(*max > 0 && *mean > 0 && *mean <= *max, "%s: ort-int8.json: max %g mean %g", name,
                  *max, *mean);
    }
    cJSON_Delete(fx);
    return found;
}

/* The recommended int8 (max v, mean mv) against ONNX Runtime int8 on model name: the max at
 * or below ORT's, the mean at or below half of ORT's (the "half of ORT int8's
 * error", on the steadier of the two figures: measured 0.35-0.42x; with one matrix on two
 * passes instead of the probe's third, 0.45-0.61x on five of the seven models). Printed
 * beside it. Returns whether the fixture had a figure. */
static int expect_within_ort(const char *name, const char *what, double v, double mv) {
    double om, omean;
    if (!ort_int8(name, &om, &omean)) return 0;
    report(name, "ONNX Runtime dynamic int8 (fixture)", om, omean, 0);
    fprintf(stderr, "  %s: %s at %.2fx ONNX Runtime int8's max error, %.2fx its mean\n", name, what,
            v / om, mv / omean);
    cr_expect_leq(v, om, "%s: %s max |dp| %.3g is above ONNX Runtime int8's %.3g", name, what, v, om);
    cr_expect_leq(mv, 0.5 * omean, "%s: %s mean |dp| %.3g is above half of ONNX Runtime int8's %.3g",
                  name, what, mv, omean);
    return 1;
}

#define TOL_LOAD 2e-2
#define TOL_FILE 3e-2
#define TOL_FAST 4e-2
/* One scale per weight row and per activation row (q8.h): coarser than Q8_0's blocks of
 * 32, the granularity class of ONNX Runtime's dynamic int8 (one scale per tensor). With one
 * pass everywhere the laya-made checkpoints measured 3.8e-2 to 6.4e-2, most of it from the
 * activation rows; two passes (the default) take that part away and leave the row-scaled
 * weights' error (1.0e-2 to 2.9e-2 there). One pass keeps two at the third of the sites
 * the load's probe finds most sensitive (int8.c probe_rows): s1-micro 3.5e-2, 6.2e-2
 * without that choice, so TOL_ROW_FAST fails when the probe picks badly. The figures are
 * in docs/quantization.md. */
#define TOL_ROW 4e-2
#define TOL_ROW_FAST 5e-2

static void run_model(const char *name) {
    gm m;
    find_model(name, &m);
    char dir[1024], f16[1200], f32[1200], q8[1200];
    make_model(name, &m, dir, sizeof dir);
    convert(dir, SKYCMD_TYPE_F16, f16, sizeof f16);
    convert(dir, SKYCMD_TYPE_F32, f32, sizeof f32);
    convert(dir, SKYCMD_TYPE_Q8_0, q8, sizeof q8);
    /* The f32 path first: if it already disagrees with the fixture, the model or the fixture
     * changed (test_golden.c names which) and the int8 figures below would mean nothing. */
    double mb, m16, m32, mf, mq, mp, mr;
    const double base = run(&m, f16, SKYCMD_WEIGHTS_F32, SKYCMD_ACT_Q8X2, 0, &mb);
    report(name, "F16, f32 compute (baseline)", base, mb, 1e-3);
    cr_assert_leq(base, 1e-3, "%s: the f32 path already differs from the Python reference by %g: "
                  "the regenerated model or the golden fixture changed (see test_golden)", name,
                  base);
    const double load16 = run(&m, f16, SKYCMD_WEIGHTS_Q8, SKYCMD_ACT_Q8X2, 1, &m16);
    report(name, "F16 -> Q8_0 at load, Q8x2, outliers", load16, m16, TOL_LOAD);
    const double load32 = run(&m, f32, SKYCMD_WEIGHTS_Q8, SKYCMD_ACT_Q8X2, 1, &m32);
    report(name, "F32 -> Q8_0 at load, Q8x2, outliers", load32, m32, TOL_LOAD);
    const double file = run(&m, q8, SKYCMD_WEIGHTS_Q8, SKYCMD_ACT_Q8X2, 1, &mf);
    report(name, "Q8_0 file, Q8x2", file, mf, TOL_FILE);
    const double fast = run(&m, f16, SKYCMD_WEIGHTS_Q8, SKYCMD_ACT_Q8, 1, &mq);
    report(name, "F16 -> Q8_0 at load, Q8 (one pass)", fast, mq, TOL_FAST);
    const double plain = run(&m, f16, SKYCMD_WEIGHTS_Q8_PLAIN, SKYCMD_ACT_Q8X2, 1, &mp);
    report(name, "F16 -> plain Q8_0 at load, Q8x2", plain, mp, TOL_FILE);
    double mr1;
    const double row = run(&m, f16, SKYCMD_WEIGHTS_Q8_ROW, SKYCMD_ACT_Q8X2, 1, &mr);
    report(name, "F16 -> row-scaled int8 at load", row, mr, TOL_ROW);
    const double row1 = run(&m, f16, SKYCMD_WEIGHTS_Q8_ROW, SKYCMD_ACT_Q8, 1, &mr1);
    report(name, "F16 -> row-scaled int8, one pass", row1, mr1, TOL_ROW_FAST);
    cr_expect_leq(row, TOL_ROW, "%s: row-scaled int8: %g", name, row);
    cr_expect_leq(row1, TOL_ROW_FAST, "%s: row-scaled int8, one-pass activations: %g", name, row1);
    cr_expect_leq(mr, mr1, "%s: two-pass row activations' mean error %g is above one pass's %g",
                  name, mr, mr1);
    cr_expect(expect_within_ort(name, "--int8", row1, mr1), "%s: ort-int8.json has no figure", name);
    cr_expect_leq(load16, TOL_LOAD, "%s: F16 quantized at load: %g", name, load16);
    cr_expect_leq(load32, TOL_LOAD, "%s: F32 quantized at load: %g", name, load32);
    cr_expect_leq(file, TOL_FILE, "%s: Q8_0 file: %g", name, file);
    cr_expect_leq(fast, TOL_FAST, "%s: single-pass activations: %g", name, fast);
    /* issue 19: calibrated --q8 never worse than plain Q8_0 (at load or from a file) */
    cr_expect_leq(load16, plain, "%s: F16 calibrated at load %g is above plain Q8_0 at load %g", name, load16, plain);
    cr_expect_leq(load16, file, "%s: F16 calibrated at load %g is above the Q8_0 file %g", name, load16, file);
    cr_expect_leq(load32, plain, "%s: F32 calibrated at load %g is above plain Q8_0 at load %g", name, load32, plain);
    cr_expect_leq(load32, file, "%s: F32 calibrated at load %g is above the Q8_0 file %g", name, load32, file);
    if (m.massive > 0) {
        /* the outlier columns must matter where massive channels exist: plain at-load Q8_0
         * worse both in the largest and in the mean error */
        cr_expect_gt(plain, load16, "%s (massive channels): plain Q8_0 max error %g is not above "
                     "the outlier path's %g", name, plain, load16);
        cr_expect_gt(mp, 1.25 * m16, "%s (massive channels): plain Q8_0 mean error %g is not "
                     "measurably above the outlier path's %g", name, mp, m16);
    }
    tu_scratch_remove();
}

Test(quant_golden, s1_pico, .timeout = 900, .fini = tu_scratch_remove) { run_model("s1-pico"); }
Test(quant_golden, s1_nano_massive, .timeout = 900, .fini = tu_scratch_remove) { run_model("s1-nano-massive"); }
Test(quant_golden, s1_micro, .timeout = 900, .fini = tu_scratch_remove) { run_model("s1-micro"); }

/* ---- checkpoints made with laya's and transformers' own classes (issue 19) ----
 * Every golden checkpoint of the manifest (tests/fixtures/golden/ckpt/, written by
 * tools/golden/make_golden.py), converted to F16 (the shipping policy) and to F32, answers every golden
 * request in f32, with calibrated --q8 (Q8x2 activations), with plain at-load Q8_0
 * (SKYCMD_WEIGHTS_Q8_PLAIN) and from a Q8_0 file (skycmd_quantize: ggml's bytes). Against
 * the f32 answers, calibrated --q8 must stay within 2e-2 and at or below both plain
 * figures, in max and in mean |dp| over every probability (issue 19). The F16 conversion also
 * answers with row-scaled int8: --q8-row within TOL_ROW, and --int8 (one pass but at the
 * probe's sites) within ONNX Runtime int8's max and half its mean, with a mean no lower
 * than --q8-row's. */

typedef struct flat {
    size_t n;
    double *p;
} flat;

static void answer_flat(const char *gguf, int weights, int act, flat *out) {
    skycmd_options *o = skycmd_options_new();
    skycmd_error *err = skycmd_error_new();
    skycmd_options_set_int(o, SKYCMD_OPT_WEIGHTS, weights);
    skycmd_model *model = NULL;
    cr_assert_eq(skycmd_model_open(gguf, o, &model, err), SKYCMD_OK, "open %s: %s", gguf,
                 skycmd_error_message(err));
    skycmd_session *sess = NULL;
    cr_assert_eq(skycmd_session_new(model, &sess), SKYCMD_OK);
    if (act >= 0) cr_assert_eq(skycmd_session_set_int(sess, SKYCMD_OPT_ACTIVATIONS, act), SKYCMD_OK);
    char rpath[1024];
    snprintf(rpath, sizeof rpath, "%s/requests.json", golden_dir());
    cJSON *reqs = tu_load_json(rpath);
    size_t cap = 256;
    out->n = 0;
    out->p = malloc(cap * sizeof *out->p);
    const cJSON *rq;
    cJSON_ArrayForEach(rq, reqs) {
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rq, "expect_error"))) continue;
        const char *body = cJSON_GetObjectItemCaseSensitive(rq, "body")->valuestring;
        skycmd_request *req = NULL;
        cr_assert_eq(skycmd_request_parse(body, strlen(body), &req), SKYCMD_OK);
        skycmd_response *resp = NULL;
        cr_assert_eq(skycmd_decide(sess, req, &resp), SKYCMD_OK, "decide: %s", skycmd_session_errmsg(sess));
        for (size_t q = 0; q < skycmd_response_answer_count(resp); q++)
            for (size_t j = 0; j < skycmd_response_option_count(resp, q); j++) {
                if (out->n == cap) out->p = realloc(out->p, (cap *= 2) * sizeof *out->p);
                out->p[out->n++] = skycmd_response_option_probability(resp, q, j);
            }
        skycmd_response_free(resp);
        skycmd_request_free(req);
    }
    cr_assert_geq(out->n, 100, "fewer than 100 probabilities compared");
    cJSON_Delete(reqs);
    skycmd_session_free(sess);
    cr_assert_eq(skycmd_model_free(model), SKYCMD_OK);
    skycmd_options_free(o);
    skycmd_error_free(err);
}

static double flat_max_dp(const flat *ref, const flat *x, double *mean) {
    cr_assert_eq(ref->n, x->n);
    double m = 0, s = 0;
    for (size_t i = 0; i < ref->n; i++) {
        const double d = fabs(x->p[i] - ref->p[i]);
        if (d > m || d != d) m = d;
        s += d;
    }
    *mean = s / (double)ref->n;
    return m;
}

Test(quant_golden, checkpoints_calibrated_vs_plain, .timeout = 1800, .fini = tu_scratch_remove) {
    char mpath[1024];
    snprintf(mpath, sizeof mpath, "%s/manifest.json", golden_dir());
    cJSON *man = tu_load_json(mpath);
    size_t n_ckpt = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(man, "models")) {
        const cJSON *ck = cJSON_GetObjectItemCaseSensitive(it, "checkpoint");
        if (!cJSON_IsString(ck)) continue;
        const char *name = cJSON_GetObjectItemCaseSensitive(it, "model")->valuestring;
        char dir[1024], ckpt[1200], src[1200], q8[1200];
        snprintf(ckpt, sizeof ckpt, "%s/%s", golden_dir(), ck->valuestring);
        static const int types[2] = {SKYCMD_TYPE_F16, SKYCMD_TYPE_F32};
        static const char *const tname[2] = {"F16", "F32"};
        for (int ti = 0; ti < 2; ti++) {
            tu_scratch_make(dir, sizeof dir, "qgolden", name);
            snprintf(src, sizeof src, "%s/model-%s.gguf", dir, tname[ti]);
            snprintf(q8, sizeof q8, "%s/model-q8_0.gguf", dir);
            skycmd_options *o = skycmd_options_new();
            skycmd_error *err = skycmd_error_new();
            skycmd_options_set_int(o, SKYCMD_OPT_TYPE, types[ti]);
            cr_assert_eq(skycmd_convert(ckpt, src, o, err), SKYCMD_OK, "%s: %s", name, skycmd_error_message(err));
            skycmd_options_set_int(o, SKYCMD_OPT_TYPE, SKYCMD_TYPE_Q8_0);
            cr_assert_eq(skycmd_quantize(src, q8, o, err), SKYCMD_OK, "%s: %s", name, skycmd_error_message(err));
            skycmd_options_free(o);
            skycmd_error_free(err);
            flat ref, cal, plain, file, rows, fast;
            answer_flat(src, SKYCMD_WEIGHTS_F32, -1, &ref);
            answer_flat(src, SKYCMD_WEIGHTS_Q8, SKYCMD_ACT_Q8X2, &cal);
            answer_flat(src, SKYCMD_WEIGHTS_Q8_PLAIN, SKYCMD_ACT_Q8X2, &plain);
            answer_flat(q8, SKYCMD_WEIGHTS_Q8, SKYCMD_ACT_Q8X2, &file);
            /* --q8-row on the shipping type only: its calibration is a second f32 pass over
             * the prompts, which under the sanitizers costs minutes per checkpoint */
            const int with_rows = types[ti] == SKYCMD_TYPE_F16;
            if (with_rows) {
                answer_flat(src, SKYCMD_WEIGHTS_Q8_ROW, -1, &rows);
                answer_flat(src, SKYCMD_WEIGHTS_Q8_ROW, SKYCMD_ACT_Q8, &fast);
            }
            double mc, mp, mf, mr;
            const double c = flat_max_dp(&ref, &cal, &mc), p = flat_max_dp(&ref, &plain, &mp),
                         f = flat_max_dp(&ref, &file, &mf);
            char what[5][80];
            snprintf(what[0], sizeof what[0], "%s -> --q8 (calibrated) vs f32", tname[ti]);
            snprintf(what[1], sizeof what[1], "%s -> plain Q8_0 at load vs f32", tname[ti]);
            snprintf(what[2], sizeof what[2], "%s -> Q8_0 file vs f32", tname[ti]);
            report(name, what[0], c, mc, TOL_LOAD);
            report(name, what[1], p, mp, 0);
            report(name, what[2], f, mf, 0);
            if (with_rows) {
                const double rw = flat_max_dp(&ref, &rows, &mr);
                snprintf(what[3], sizeof what[3], "%s -> --q8-row vs f32", tname[ti]);
                report(name, what[3], rw, mr, TOL_ROW);
                cr_expect_leq(rw, TOL_ROW, "%s %s: --q8-row max |dp| %.3g vs f32 (bound %g)", name,
                              tname[ti], rw, TOL_ROW);
                double mr1;
                const double rw1 = flat_max_dp(&ref, &fast, &mr1);
                snprintf(what[4], sizeof what[4], "%s -> --int8 vs f32", tname[ti]);
                report(name, what[4], rw1, mr1, TOL_ROW_FAST);
                cr_expect_leq(mr, mr1, "%s: --q8-row's mean error %g is above --int8's %g", name, mr, mr1);
                /* against f32 here, ORT's against laya fp32: the F16 conversion's own
                 * distance from laya (<= 1.1e-3 on these) is part of both */
                expect_within_ort(name, "--int8", rw1, mr1);
                free(rows.p);
                free(fast.p);
            }
            cr_expect_leq(c, TOL_LOAD, "%s %s: calibrated --q8 max |dp| %.3g vs f32 (bound %g)", name,
                          tname[ti], c, TOL_LOAD);
            /* issue 19: calibrated --q8 never worse than plain Q8_0, in the largest error
             * and in the mean, whether quantized at load or read from a Q8_0 file */
            cr_expect_leq(c, p, "%s %s: calibrated --q8 max |dp| %.3g is above plain at-load Q8_0's %.3g",
                          name, tname[ti], c, p);
            cr_expect_leq(c, f, "%s %s: calibrated --q8 max |dp| %.3g is above the Q8_0 file's %.3g",
                          name, tname[ti], c, f);
            cr_expect_leq(mc, mp, "%s %s: calibrated --q8 mean |dp| %.3g is above plain at-load Q8_0's %.3g",
                          name, tname[ti], mc, mp);
            cr_expect_leq(mc, mf, "%s %s: calibrated --q8 mean |dp| %.3g is above the Q8_0 file's %.3g",
                          name, tname[ti], mc, mf);
            free(ref.p);
            free(cal.p);
            free(plain.p);
            free(file.p);
            tu_scratch_remove();
        }
        n_ckpt++;
    }
    cJSON_Delete(man);
    cr_assert_geq(n_ckpt, 1, "the golden manifest lists no checkpoint");
}
