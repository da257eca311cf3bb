/*
 * test_flappy.c - the built-in trained model (models/s1-pico-flappy.gguf, made by
 * tools/train/train.py with laya 0.4.15's own training loop) on the committed Flappy Drone
 * test set (tests/fixtures/flappy/test.jsonl: simulator states labelled by the oracle of
 * tools/train/flappy.py).
 *
 *   - our answers equal laya's (tests/fixtures/flappy/laya.json, written by
 *     tools/golden/make_flappy_golden.py from the committed Laya checkpoint
 *     models/s1-pico-flappy.laya): same input_tokens and choices, max |dp| <= 1e-4 for the
 *     shipped file (F16 encoder, F32 head: laya saves its weights as F16, so the file holds
 *     them exactly) and for an F32 conversion of the checkpoint;
 *   - the model answers the questions: action accuracy, danger AUC and the calibration
 *     error of each question against the oracle, held to the figures the training report
 *     gives for this model (so a decide-path regression on trained weights shows);
 *   - int8 (--q8, --q8-fast, a Q8_0 file) against f32 on every test state: max and mean
 *     |dp| and the agreement of the action choice (the seed's table, on our own model).
 * Figures are printed and appended to <build>/flappy-report.txt.
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

#define MODEL_GGUF SKYCMD_SOURCE_DIR "/models/s1-pico-flappy.gguf"
#define MODEL_LAYA SKYCMD_SOURCE_DIR "/models/s1-pico-flappy.laya"
#define FLAPPY SKYCMD_FIXTURES "/flappy"

/* The three answers of one test state. */
typedef struct row_answer {
    double p_thrust, p_glide; /* action */
    double p_danger;          /* danger: P(true) */
    double p_margin[3];       /* margin levels */
    int64_t input_tokens;
} row_answer;

typedef struct test_set {
    size_t n;
    char **bodies;  /* the request of each row */
    int *thrust;    /* oracle: 1 = thrust */
    int *danger;    /* oracle: crash within half a second when gliding */
    int *margin;    /* oracle: 0, 1, 2 */
} test_set;

static void load_test_set(test_set *t) {
    size_t len = 0;
    char *text = tu_read_file(FLAPPY "/test.jsonl", &len);
    cr_assert_not_null(text, "cannot read " FLAPPY "/test.jsonl");
    size_t cap = 4096;
    memset(t, 0, sizeof *t);
    t->bodies = malloc(cap * sizeof *t->bodies);
    t->thrust = malloc(cap * sizeof *t->thrust);
    t->danger = malloc(cap * sizeof *t->danger);
    t->margin = malloc(cap * sizeof *t->margin);
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        cJSON *r = cJSON_Parse(line);
        cr_assert_not_null(r, "bad test-set line %zu", t->n + 1);
        cr_assert_lt(t->n, cap);
        cJSON *req = cJSON_CreateObject();
        cJSON_AddItemToObject(req, "state", cJSON_Duplicate(cJSON_GetObjectItem(r, "state"), 1));
        cJSON_AddItemToObject(req, "questions", cJSON_Duplicate(cJSON_GetObjectItem(r, "questions"), 1));
        t->bodies[t->n] = cJSON_PrintUnformatted(req);
        cJSON_Delete(req);
        cJSON *y = cJSON_GetObjectItem(r, "expected");
        t->thrust[t->n] = strcmp(cJSON_GetObjectItem(y, "action")->valuestring, "thrust") == 0;
        t->danger[t->n] = cJSON_IsTrue(cJSON_GetObjectItem(y, "danger"));
        t->margin[t->n] = (int)cJSON_GetObjectItem(y, "margin")->valuedouble;
        t->n++;
        cJSON_Delete(r);
    }
    free(text);
    cr_assert_geq(t->n, 2000, "the test set has %zu states (at least 2,000 expected)", t->n);
}

static void free_test_set(test_set *t) {
    for (size_t i = 0; i < t->n; i++) cJSON_free(t->bodies[i]);
    free(t->bodies);
    free(t->thrust);
    free(t->danger);
    free(t->margin);
}

static double option_p(const skycmd_response *r, size_t q, const char *key) {
    for (size_t j = 0; j < skycmd_response_option_count(r, q); j++)
        if (strcmp(skycmd_response_option_key(r, q, j), key) == 0)
            return skycmd_response_option_probability(r, q, j);
    cr_assert_fail("answer %zu has no option %s", q, key);
    return NAN;
}

/* SKYCMD_FLAPPY_STRIDE=k: the comparison with laya reads every k-th state only (an emulator,
 * where the whole set takes minutes: tools/test-arm64.sh). Default 1: every state. */
static size_t laya_stride(void) {
    const char *v = getenv("SKYCMD_FLAPPY_STRIDE");
    long k = v ? strtol(v, NULL, 10) : 1;
    return k > 1 ? (size_t)k : 1;
}

/* Answer every `stride`-th test state (the others stay zero) with the model at path
 * (weights/activations as given). */
static row_answer *answer_every(const test_set *t, const char *path, int weights, int acts, size_t stride) {
    skycmd_options *o = skycmd_options_new();
    skycmd_error *err = skycmd_error_new();
    cr_assert_eq(skycmd_options_set_int(o, SKYCMD_OPT_WEIGHTS, weights), 0);
    skycmd_model *m = NULL;
    cr_assert_eq(skycmd_model_open(path, o, &m, err), 0, "%s: %s", path, skycmd_error_message(err));
    skycmd_session *s = NULL;
    cr_assert_eq(skycmd_session_new(m, &s), 0);
    if (acts >= 0) cr_assert_eq(skycmd_session_set_int(s, SKYCMD_OPT_ACTIVATIONS, acts), 0);
    row_answer *out = calloc(t->n, sizeof *out);
    for (size_t i = 0; i < t->n; i += stride) {
        skycmd_request *req = NULL;
        cr_assert_eq(skycmd_request_parse(t->bodies[i], strlen(t->bodies[i]), &req), 0, "%s",
                     skycmd_request_errmsg(req));
        skycmd_response *r = NULL;
        cr_assert_eq(skycmd_decide(s, req, &r), 0, "%s", skycmd_session_errmsg(s));
        cr_assert_str_eq(skycmd_response_answer_id(r, 0), "action");
        cr_assert_str_eq(skycmd_response_answer_id(r, 1), "danger");
        cr_assert_str_eq(skycmd_response_answer_id(r, 2), "margin");
        out[i].p_thrust = option_p(r, 0, "thrust");
        out[i].p_glide = option_p(r, 0, "glide");
        out[i].p_danger = option_p(r, 1, "true");
        for (int k = 0; k < 3; k++) out[i].p_margin[k] = skycmd_response_option_probability(r, 2, (size_t)k);
        out[i].input_tokens = skycmd_response_input_tokens(r);
        skycmd_response_free(r);
        skycmd_request_free(req);
    }
    skycmd_session_free(s);
    cr_assert_eq(skycmd_model_free(m), 0);
    skycmd_options_free(o);
    skycmd_error_free(err);
    return out;
}

/* Answer every test state. */
static row_answer *answer_all(const test_set *t, const char *path, int weights, int acts) {
    return answer_every(t, path, weights, acts, 1);
}

static void report(const char *fmt, ...) {
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    cr_log_info("%s", line);
    FILE *f = fopen(SKYCMD_BINARY_DIR "/flappy-report.txt", "a");
    if (f) {
        fprintf(f, "%s\n", line);
        fclose(f);
    }
}

/* laya's probabilities of case i, question q, in option order. */
static const cJSON *laya_question(const cJSON *cases, size_t i, size_t q) {
    const cJSON *c = cJSON_GetArrayItem(cases, (int)i);
    return cJSON_GetArrayItem(cJSON_GetObjectItem(c, "questions"), (int)q);
}

static double laya_p(const cJSON *q, const char *key) {
    const cJSON *keys = cJSON_GetObjectItem(q, "keys"), *p = cJSON_GetObjectItem(q, "probabilities");
    for (int j = 0; j < cJSON_GetArraySize(keys); j++)
        if (strcmp(cJSON_GetArrayItem(keys, j)->valuestring, key) == 0)
            return cJSON_GetArrayItem(p, j)->valuedouble;
    cr_assert_fail("laya's question has no option %s", key);
    return NAN;
}

/* Compare the answers to every `stride`-th state with laya's. */
static void compare_with_laya(const test_set *t, const row_answer *a, const char *what, size_t stride) {
    cJSON *fx = tu_load_json(FLAPPY "/laya.json");
    cr_assert_not_null(fx);
    const cJSON *cases = cJSON_GetObjectItem(fx, "cases");
    cr_assert_eq((size_t)cJSON_GetArraySize(cases), t->n, "laya.json and test.jsonl disagree in size");
    double worst = 0;
    size_t bad_tokens = 0, bad_choice = 0, compared = 0;
    for (size_t i = 0; i < t->n; i += stride, compared++) {
        const cJSON *c = cJSON_GetArrayItem(cases, (int)i);
        if ((int64_t)cJSON_GetObjectItem(c, "input_tokens")->valuedouble != a[i].input_tokens) bad_tokens++;
        const cJSON *qa = laya_question(cases, i, 0), *qd = laya_question(cases, i, 1),
                    *qm = laya_question(cases, i, 2);
        double lt = laya_p(qa, "thrust"), lg = laya_p(qa, "glide");
        double d[6] = {a[i].p_thrust - lt, a[i].p_glide - lg, a[i].p_danger - laya_p(qd, "true"),
                       a[i].p_margin[0] - laya_p(qm, "0"), a[i].p_margin[1] - laya_p(qm, "1"),
                       a[i].p_margin[2] - laya_p(qm, "2")};
        for (int k = 0; k < 6; k++) worst = fmax(worst, fabs(d[k]));
        if ((a[i].p_thrust > a[i].p_glide) != (lt > lg)) bad_choice++;
    }
    report("flappy %s vs laya: max |dp| %.2e over %zu states; input_tokens differ %zu; action choice differs %zu",
           what, worst, compared, bad_tokens, bad_choice);
    cr_expect_eq(bad_tokens, 0);
    cr_expect_eq(bad_choice, 0);
    cr_expect_leq(worst, 1e-4, "%s: max |dp| %.3g vs laya", what, worst);
    cJSON_Delete(fx);
}

Test(flappy, shipped_file_answers_like_laya) {
    test_set t;
    load_test_set(&t);
    row_answer *a = answer_every(&t, MODEL_GGUF, SKYCMD_WEIGHTS_F32, -1, laya_stride());
    compare_with_laya(&t, a, "F16 file", laya_stride());
    free(a);
    free_test_set(&t);
}

Test(flappy, f32_conversion_answers_like_laya) {
    test_set t;
    load_test_set(&t);
    char dir[1024], path[1100];
    tu_scratch_make(dir, sizeof dir, "flappy", "f32");
    snprintf(path, sizeof path, "%s/flappy-f32.gguf", dir);
    skycmd_options *o = skycmd_options_new();
    skycmd_error *err = skycmd_error_new();
    cr_assert_eq(skycmd_options_set_int(o, SKYCMD_OPT_TYPE, SKYCMD_TYPE_F32), 0);
    cr_assert_eq(skycmd_convert(MODEL_LAYA, path, o, err), 0, "%s", skycmd_error_message(err));
    row_answer *a = answer_all(&t, path, SKYCMD_WEIGHTS_F32, -1);
    compare_with_laya(&t, a, "F32 conversion", 1);
    free(a);
    skycmd_options_free(o);
    skycmd_error_free(err);
    tu_scratch_remove();
    free_test_set(&t);
}

/* The shipped file is what `skycmd convert` makes of the committed checkpoint. */
Test(flappy, shipped_file_is_the_checkpoint_converted) {
    char dir[1024], path[1100];
    tu_scratch_make(dir, sizeof dir, "flappy", "conv");
    snprintf(path, sizeof path, "%s/flappy.gguf", dir);
    skycmd_options *o = skycmd_options_new();
    skycmd_error *err = skycmd_error_new();
    cr_assert_eq(skycmd_options_set_string(o, SKYCMD_OPT_NAME, "s1-pico-flappy"), 0);
    cr_assert_eq(skycmd_convert(MODEL_LAYA, path, o, err), 0, "%s", skycmd_error_message(err));
    size_t na = 0, nb = 0;
    char *a = tu_slurp(MODEL_GGUF, &na), *b = tu_slurp(path, &nb);
    cr_assert(a && b);
    cr_expect(na == nb && memcmp(a, b, na) == 0, "models/s1-pico-flappy.gguf differs from the conversion of models/s1-pico-flappy.laya");
    free(a);
    free(b);
    skycmd_options_free(o);
    skycmd_error_free(err);
    tu_scratch_remove();
}

static double auc(const double *score, const int *label, size_t n) {
    /* the probability that a positive outranks a negative (ties count half), O(n^2) is fine here */
    double wins = 0;
    size_t pos = 0, neg = 0;
    for (size_t i = 0; i < n; i++) {
        if (label[i]) pos++;
        else neg++;
    }
    for (size_t i = 0; i < n; i++) {
        if (!label[i]) continue;
        for (size_t j = 0; j < n; j++) {
            if (label[j]) continue;
            wins += score[i] > score[j] ? 1.0 : score[i] == score[j] ? 0.5 : 0.0;
        }
    }
    return pos && neg ? wins / ((double)pos * (double)neg) : NAN;
}

/* Expected calibration error of the top-1 probability, 10 equal-width bins. */
static double ece(const double *conf, const int *correct, size_t n) {
    double err = 0;
    for (int b = 0; b < 10; b++) {
        double lo = b / 10.0, hi = (b + 1) / 10.0, sc = 0, sa = 0;
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            if ((conf[i] > lo && conf[i] <= hi) || (b == 0 && conf[i] == 0)) {
                sc += conf[i];
                sa += correct[i];
                k++;
            }
        }
        if (k) err += (double)k / (double)n * fabs(sa / (double)k - sc / (double)k);
    }
    return err;
}

Test(flappy, answers_the_oracle) {
    test_set t;
    load_test_set(&t);
    row_answer *a = answer_all(&t, MODEL_GGUF, SKYCMD_WEIGHTS_F32, -1);
    double *conf = calloc(t.n, sizeof *conf), *score = calloc(t.n, sizeof *score);
    int *ok = calloc(t.n, sizeof *ok);
    size_t right = 0;
    for (size_t i = 0; i < t.n; i++) {
        int thrust = a[i].p_thrust > a[i].p_glide;
        ok[i] = thrust == t.thrust[i];
        right += (size_t)ok[i];
        conf[i] = fmax(a[i].p_thrust, a[i].p_glide);
    }
    double action_acc = (double)right / (double)t.n, action_ece = ece(conf, ok, t.n);
    right = 0;
    for (size_t i = 0; i < t.n; i++) {
        score[i] = a[i].p_danger;
        ok[i] = (a[i].p_danger >= 0.5) == t.danger[i];
        right += (size_t)ok[i];
        conf[i] = fmax(a[i].p_danger, 1 - a[i].p_danger);
    }
    double danger_acc = (double)right / (double)t.n, danger_auc = auc(score, t.danger, t.n),
           danger_ece = ece(conf, ok, t.n);
    right = 0;
    for (size_t i = 0; i < t.n; i++) {
        int best = 0;
        for (int k = 1; k < 3; k++) if (a[i].p_margin[k] > a[i].p_margin[best]) best = k;
        ok[i] = best == t.margin[i];
        right += (size_t)ok[i];
        conf[i] = a[i].p_margin[best];
    }
    double margin_acc = (double)right / (double)t.n, margin_ece = ece(conf, ok, t.n);
    report("flappy oracle (%zu states): action accuracy %.4f ECE %.4f; danger accuracy %.4f AUC %.4f ECE %.4f; "
           "margin accuracy %.4f ECE %.4f", t.n, action_acc, action_ece, danger_acc, danger_auc, danger_ece,
           margin_acc, margin_ece);
    /* the trained model's own figures (models/s1-pico-flappy.report.json), less a little */
    cJSON *rep = tu_load_json(SKYCMD_SOURCE_DIR "/models/s1-pico-flappy.report.json");
    cr_assert_not_null(rep);
    const cJSON *test = cJSON_GetObjectItem(rep, "test");
    double want_action = cJSON_GetObjectItem(cJSON_GetObjectItem(test, "action"), "accuracy")->valuedouble;
    double want_auc = cJSON_GetObjectItem(cJSON_GetObjectItem(test, "danger"), "auc")->valuedouble;
    cr_expect_geq(action_acc, want_action - 0.005, "action accuracy %.4f (laya measured %.4f)", action_acc, want_action);
    cr_expect_geq(danger_auc, want_auc - 0.005, "danger AUC %.4f (laya measured %.4f)", danger_auc, want_auc);
    /* issue 21's targets */
    cr_expect_geq(action_acc, 0.95, "action accuracy %.4f (issue 21: >= 0.95)", action_acc);
    cr_expect_geq(danger_auc, 0.95, "danger AUC %.4f (issue 21: >= 0.95)", danger_auc);
    cr_expect_leq(action_ece, 0.05, "action ECE %.4f (issue 21: <= 0.05)", action_ece);
    cr_expect_leq(danger_ece, 0.05, "danger ECE %.4f (issue 21: <= 0.05)", danger_ece);
    cr_expect_leq(margin_ece, 0.05, "margin ECE %.4f (issue 21: <= 0.05)", margin_ece);
    cJSON_Delete(rep);
    free(conf);
    free(score);
    free(ok);
    free(a);
    free_test_set(&t);
}

/* max |dp| against f32 (returned; the mean into *mean), held to bound, and the action choice
 * held to >= 99 % agreement. */
static double int8_against_f32(const test_set *t, const row_answer *f, const row_answer *q, const char *what,
                               double bound, double *mean) {
    double worst = 0, sum = 0;
    size_t agree = 0;
    for (size_t i = 0; i < t->n; i++) {
        double d[6] = {q[i].p_thrust - f[i].p_thrust, q[i].p_glide - f[i].p_glide, q[i].p_danger - f[i].p_danger,
                       q[i].p_margin[0] - f[i].p_margin[0], q[i].p_margin[1] - f[i].p_margin[1],
                       q[i].p_margin[2] - f[i].p_margin[2]};
        for (int k = 0; k < 6; k++) {
            worst = fmax(worst, fabs(d[k]));
            sum += fabs(d[k]);
        }
        agree += (q[i].p_thrust > q[i].p_glide) == (f[i].p_thrust > f[i].p_glide);
    }
    double share = (double)agree / (double)t->n;
    report("flappy %-12s vs f32: max |dp| %.2e, mean |dp| %.2e, same action on %.2f %% of %zu states", what,
           worst, sum / (6.0 * (double)t->n), 100.0 * share, t->n);
    cr_expect_leq(worst, bound, "%s: max |dp| %.3g (bound %.g)", what, worst, bound);
    cr_expect_geq(share, 0.99, "%s: the same action on %.2f %% of the states", what, 100.0 * share);
    *mean = sum / (6.0 * (double)t->n);
    return worst;
}

Test(flappy, int8_modes_against_f32) {
    test_set t;
    load_test_set(&t);
    row_answer *f = answer_all(&t, MODEL_GGUF, SKYCMD_WEIGHTS_F32, -1);
    /* Issue 21's targets: --q8 within 2e-2 and --q8-fast within 4e-2 of f32, the same
     * action on >= 99 % of the states (int8_against_f32); issue 19's: calibrated --q8 never
     * worse than plain Q8_0 (here the Q8_0 file, ggml's plain blocks) in max and mean. */
    row_answer *q8 = answer_all(&t, MODEL_GGUF, SKYCMD_WEIGHTS_Q8, SKYCMD_ACT_Q8X2);
    double q8_mean = 0;
    const double q8_max = int8_against_f32(&t, f, q8, "--q8", 2e-2, &q8_mean);
    free(q8);
    row_answer *fast = answer_all(&t, MODEL_GGUF, SKYCMD_WEIGHTS_Q8, SKYCMD_ACT_Q8);
    double fast_mean = 0;
    int8_against_f32(&t, f, fast, "--q8-fast", 4e-2, &fast_mean);
    free(fast);
    /* row-scaled int8 (--q8-row): the bound of test_quant_golden.c's TOL_ROW */
    row_answer *rows = answer_all(&t, MODEL_GGUF, SKYCMD_WEIGHTS_Q8_ROW, -1);
    double rows_mean = 0;
    int8_against_f32(&t, f, rows, "--q8-row", 8e-2, &rows_mean);
    free(rows);
    char dir[1024], path[1100];
    tu_scratch_make(dir, sizeof dir, "flappy", "q8");
    snprintf(path, sizeof path, "%s/flappy-q8_0.gguf", dir);
    skycmd_options *o = skycmd_options_new();
    skycmd_error *err = skycmd_error_new();
    cr_assert_eq(skycmd_options_set_int(o, SKYCMD_OPT_TYPE, SKYCMD_TYPE_Q8_0), 0);
    cr_assert_eq(skycmd_quantize(MODEL_GGUF, path, o, err), 0, "%s", skycmd_error_message(err));
    row_answer *file = answer_all(&t, path, SKYCMD_WEIGHTS_Q8, SKYCMD_ACT_Q8X2);
    double file_mean = 0;
    const double file_max = int8_against_f32(&t, f, file, "Q8_0 file", 5e-2, &file_mean);
    cr_expect_leq(q8_max, file_max, "--q8 max |dp| %.3g is above the Q8_0 file's %.3g", q8_max, file_max);
    cr_expect_leq(q8_mean, file_mean, "--q8 mean |dp| %.3g is above the Q8_0 file's %.3g", q8_mean, file_mean);
    free(file);
    skycmd_options_free(o);
    skycmd_error_free(err);
    tu_scratch_remove();
    free(f);
    free_test_set(&t);
}
