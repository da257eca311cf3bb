/*
 * test_golden.c - the golden suite: our decide path against the real Python Laya runtime.
 *
 * Fixtures (tests/fixtures/golden, written by tools/golden/make_golden.py with laya 0.4.15,
 * torch, transformers; see docs/golden.md): requests.json holds the request bodies as raw
 * JSON text; <model>.json holds, per request and question, laya's token ids, markers, raw
 * scorer logits, probabilities (after laya's temperature clamp and softmax) and answers;
 * manifest.json says how each model was made.
 *
 * No Python and no weights are needed here: each model is regenerated with
 * skycmd_random_model() (deterministic from its seed) as a Laya directory, the SHA-256 of its
 * model.safetensors is checked against the manifest (so generator drift is caught as such
 * and not reported as a numerical failure), the manifest's temperature rewrite is applied to
 * rl_agent_config.json, and the directory is converted to GGUF F32 and F16.
 *
 * Checks (every one fails the test; nothing is skipped):
 *   - token ids and markers identical to laya's for every question (prompt builder on the
 *     model's own tokenizer and the request as sk_request_parse renders it), and
 *     usage.input_tokens equal to laya's token count;
 *   - max |p - p_python| <= 1e-4 (F32 GGUF) and <= 1e-3 (F16 GGUF) over every probability;
 *     for F16 also <= 1e-4 against laya run on F16-rounded encoder matrices (so the F16
 *     format's own loss and an error of ours are told apart); the same choice everywhere;
 *     score and noul values within the same bound (score scaled by the level count); the
 *     llama.cpp (TypeSafe) confidence recomputed from laya's probabilities within 10x it;
 *   - bodies laya refuses (and llama-server's rules refuse) are refused.
 * One test per model and file type. Mismatches are counted (the first 15 printed) and fail
 * the test at the end of its run; the measured maxima are printed and appended to
 * <build>/golden-report.txt.
 */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "skycmd.h"
#include "decide/request.h"
#include "prompt/prompt.h"
#include "tokenizer/tokenizer.h"
#include "test_util.h"

#define GOLDEN_DIR SKYCMD_FIXTURES "/golden"

/* ------------------------------------------------------------------ SHA-256 (FIPS 180-4) */
typedef struct sha256 {
    uint32_t h[8];
    uint64_t len;
    uint8_t buf[64];
    size_t n;
} sha256;

static const uint32_t K256[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha256_block(sha256 *s, const uint8_t *p) {
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 |
               (uint32_t)p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3];
    uint32_t e = s->h[4], f = s->h[5], g = s->h[6], h = s->h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t S1 = ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25);
        uint32_t ch = (e & f) ^ (~e & g);
        uint32_t t1 = h + S1 + ch + K256[i] + w[i];
        uint32_t S0 = ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22);
        uint32_t mj = (a & b) ^ (a & c) ^ (b & c);
        uint32_t t2 = S0 + mj;
        h = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    s->h[0] += a;
    s->h[1] += b;
    s->h[2] += c;
    s->h[3] += d;
    s->h[4] += e;
    s->h[5] += f;
    s->h[6] += g;
    s->h[7] += h;
}

static void sha256_init(sha256 *s) {
    static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, h0, sizeof h0);
    s->len = 0;
    s->n = 0;
}

static void sha256_update(sha256 *s, const uint8_t *p, size_t n) {
    s->len += n;
    while (n) {
        size_t take = 64 - s->n < n ? 64 - s->n : n;
        memcpy(s->buf + s->n, p, take);
        s->n += take;
        p += take;
        n -= take;
        if (s->n == 64) {
            sha256_block(s, s->buf);
            s->n = 0;
        }
    }
}

static void sha256_hex(sha256 *s, char out[65]) {
    uint64_t bits = s->len * 8;
    uint8_t pad = 0x80, zero = 0, lenb[8];
    sha256_update(s, &pad, 1);
    while (s->n != 56) sha256_update(s, &zero, 1);
    for (int i = 0; i < 8; i++) lenb[i] = (uint8_t)(bits >> (56 - 8 * i));
    sha256_update(s, lenb, 8);
    for (int i = 0; i < 8; i++) snprintf(out + 8 * i, 9, "%08x", s->h[i]);
}

static int sha256_file(const char *path, char out[65]) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    sha256 s;
    sha256_init(&s);
    uint8_t buf[1 << 15];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0) sha256_update(&s, buf, got);
    fclose(f);
    sha256_hex(&s, out);
    return 0;
}

Test(golden_sha256, known_vectors) {
    char hex[65];
    sha256 s;
    sha256_init(&s);
    sha256_hex(&s, hex);
    cr_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    sha256_init(&s);
    sha256_update(&s, (const uint8_t *)"abc", 3);
    sha256_hex(&s, hex);
    cr_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    sha256_init(&s);
    sha256_update(&s, (const uint8_t *)m, strlen(m));
    sha256_hex(&s, hex);
    cr_assert_str_eq(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    /* 1000 bytes fed in uneven pieces: block boundaries inside an update */
    sha256_init(&s);
    uint8_t a[1000];
    memset(a, 'a', sizeof a);
    sha256_update(&s, a, 7);
    sha256_update(&s, a + 7, 121);
    sha256_update(&s, a + 128, 872);
    sha256_hex(&s, hex);
    cr_assert_str_eq(hex, "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
}

/* ------------------------------------------------------------------ the models ------ */
typedef struct golden_model {
    char name[64];
    char preset[32];
    int64_t seed, massive;
    char sha[65];
    cJSON *overrides;   /* borrowed from the manifest, may be NULL */
    char fixture[128];
    char checkpoint[128]; /* a committed checkpoint built by laya's own classes, else "" */
    double f16_tol;       /* manifest f16_tolerance (F16 file vs laya on the file's weights), else 0 */
} golden_model;

static cJSON *g_manifest;

static int find_model(const char *name, golden_model *m) {
    if (!g_manifest) g_manifest = tu_load_json(GOLDEN_DIR "/manifest.json");
    const cJSON *models = cJSON_GetObjectItemCaseSensitive(g_manifest, "models");
    const cJSON *it;
    cJSON_ArrayForEach(it, models) {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(it, "model");
        if (!cJSON_IsString(n) || strcmp(n->valuestring, name) != 0) continue;
        memset(m, 0, sizeof *m);
        snprintf(m->name, sizeof m->name, "%s", name);
        snprintf(m->fixture, sizeof m->fixture, "%s",
                 cJSON_GetObjectItemCaseSensitive(it, "fixture")->valuestring);
        snprintf(m->sha, sizeof m->sha, "%s",
                 cJSON_GetObjectItemCaseSensitive(it, "model_safetensors_sha256")->valuestring);
        const cJSON *ck = cJSON_GetObjectItemCaseSensitive(it, "checkpoint");
        if (cJSON_IsString(ck)) {
            snprintf(m->checkpoint, sizeof m->checkpoint, "%s", ck->valuestring);
            const cJSON *ft = cJSON_GetObjectItemCaseSensitive(it, "f16_tolerance");
            if (cJSON_IsNumber(ft)) m->f16_tol = ft->valuedouble;
            return 0;
        }
        snprintf(m->preset, sizeof m->preset, "%s",
                 cJSON_GetObjectItemCaseSensitive(it, "preset")->valuestring);
        m->seed = (int64_t)cJSON_GetObjectItemCaseSensitive(it, "seed")->valuedouble;
        m->massive = (int64_t)cJSON_GetObjectItemCaseSensitive(it, "massive")->valuedouble;
        snprintf(m->sha, sizeof m->sha, "%s",
                 cJSON_GetObjectItemCaseSensitive(it, "model_safetensors_sha256")->valuestring);
        snprintf(m->fixture, sizeof m->fixture, "%s",
                 cJSON_GetObjectItemCaseSensitive(it, "fixture")->valuestring);
        cJSON *ov = cJSON_GetObjectItemCaseSensitive(it, "temperature_overrides");
        m->overrides = cJSON_IsObject(ov) ? ov : NULL;
        return 0;
    }
    return -1;
}

/* Regenerate the model's Laya directory, check its weights' digest, apply the manifest's
 * temperature rewrite. */
static void regenerate(const golden_model *m, const char *laya_dir) {
    skycmd_options *o = skycmd_options_new();
    skycmd_error *err = skycmd_error_new();
    cr_assert(o && err);
    cr_assert_eq(skycmd_options_set_int(o, SKYCMD_OPT_SEED, m->seed), SKYCMD_OK);
    cr_assert_eq(skycmd_options_set_int(o, SKYCMD_OPT_MASSIVE, m->massive), SKYCMD_OK);
    cr_assert_eq(skycmd_options_set_int(o, SKYCMD_OPT_LAYOUT, SKYCMD_LAYOUT_LAYA), SKYCMD_OK);
    int st = skycmd_random_model(m->preset, laya_dir, o, err);
    cr_assert_eq(st, SKYCMD_OK, "%s: skycmd_random_model(%s): %s: %s", m->name, m->preset,
                 skycmd_status_name(st), skycmd_error_message(err));
    skycmd_options_free(o);
    skycmd_error_free(err);

    char path[1400], hex[65];
    snprintf(path, sizeof path, "%s/model.safetensors", laya_dir);
    cr_assert_eq(sha256_file(path, hex), 0, "cannot read %s", path);
    cr_assert_str_eq(hex, m->sha,
                     "%s: the random generator drifted: model.safetensors has SHA-256 %s, the "
                     "fixtures were made from %s; regenerate them with tools/golden/make_golden.py",
                     m->name, hex, m->sha);

    if (m->overrides) {
        snprintf(path, sizeof path, "%s/rl_agent_config.json", laya_dir);
        cJSON *cfg = tu_load_json(path);
        const cJSON *kv;
        cJSON_ArrayForEach(kv, m->overrides) {
            cJSON_DeleteItemFromObjectCaseSensitive(cfg, kv->string);
            cJSON_AddItemToObject(cfg, kv->string, cJSON_Duplicate(kv, 1));
        }
        char *out = cJSON_Print(cfg);
        cr_assert(out != NULL);
        cr_assert_eq(tu_write_file(path, out, strlen(out)), 0, "cannot write %s", path);
        free(out);
        cJSON_Delete(cfg);
    }
}

static void convert(const golden_model *m, const char *laya_dir, const char *gguf, int type) {
    skycmd_options *o = skycmd_options_new();
    skycmd_error *err = skycmd_error_new();
    cr_assert(o && err);
    cr_assert_eq(skycmd_options_set_int(o, SKYCMD_OPT_TYPE, type), SKYCMD_OK);
    int st = skycmd_convert(laya_dir, gguf, o, err);
    cr_assert_eq(st, SKYCMD_OK, "%s: skycmd_convert(type %d): %s: %s", m->name, type,
                 skycmd_status_name(st), skycmd_error_message(err));
    skycmd_options_free(o);
    skycmd_error_free(err);
}

/* ------------------------------------------------------------------ prompt ids ------ */

/* ------------------------------------------------------------------ one suite run --- */
typedef struct stats {
    double max_dp, max_dp16w, max_dscore, max_dnoul, max_dconf;
    char where_dp[200], where_dp16w[200];
    size_t n_prob, n_questions, n_requests, n_errors, n_choices, n_ids;
    size_t n_fail, n_fail_impl;
    char first_fail[600];
} stats;

/* A failed comparison: counted, the first few printed; the test fails at the end of the
 * model's run (after the report), so one run shows every kind of mismatch at once. */
static void fail_soft(stats *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail_soft(stats *s, const char *fmt, ...) {
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (s->n_fail == 0) snprintf(s->first_fail, sizeof s->first_fail, "%s", msg);
    if (s->n_fail < 15) fprintf(stderr, "golden MISMATCH %s\n", msg);
    s->n_fail++;
}

static void report(const golden_model *m, const char *type, double tol, const stats *s) {
    char line[1400];
    int n = snprintf(line, sizeof line,
                     "golden %-16s %-3s requests %zu (+%zu refused) questions %zu probabilities %zu "
                     "| ids+markers compared %zu | choices same %zu/%zu | max|dp| %.3g (at %s) "
                     "max|dscore| %.3g max|dnoul| %.3g max|dconf_typesafe| %.3g | bound %.0e",
                     m->name, type, s->n_requests, s->n_errors, s->n_questions, s->n_prob, s->n_ids,
                     s->n_choices, s->n_choices, s->max_dp, s->where_dp, s->max_dscore, s->max_dnoul,
                     s->max_dconf, tol);
    if (n > 0 && (size_t)n < sizeof line && s->where_dp16w[0])
        n += snprintf(line + n, sizeof line - (size_t)n,
                      " | vs laya on F16-rounded weights: max|dp| %.3g (at %s)", s->max_dp16w,
                      s->where_dp16w);
    if (n > 0 && (size_t)n < sizeof line)
        snprintf(line + n, sizeof line - (size_t)n, " | mismatches %zu\n", s->n_fail);
    fputs(line, stderr);
    FILE *f = fopen(SKYCMD_BINARY_DIR "/golden-report.txt", "a");
    if (f) {
        fputs(line, f);
        fclose(f);
    }
}

static double jnum(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    cr_assert(cJSON_IsNumber(v), "fixture: \"%s\" missing", k);
    return v->valuedouble;
}

static int same_ints(const cJSON *arr, const sk_i32v *got, char *why, size_t cap) {
    size_t n = (size_t)cJSON_GetArraySize(arr), i = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, arr) {
        if (i >= got->n || got->v[i] != (int32_t)x->valuedouble) {
            snprintf(why, cap, "index %zu: laya %d, ours %d (lengths %zu / %zu)", i, (int)x->valuedouble,
                     i < got->n ? got->v[i] : -1, n, got->n);
            return 0;
        }
        i++;
    }
    if (n != got->n) {
        snprintf(why, cap, "lengths differ: laya %zu, ours %zu", n, got->n);
        return 0;
    }
    return 1;
}

/* Bounds: F32 files 1e-4, F16 files 1e-3 against laya on the checkpoint's own weights; the
 * F16 run must also match laya on F16-rounded weights within the F32 bound, which shows the
 * remaining difference is the file format's and not ours. */
static const struct {
    int type;
    const char *name;
    double tol;
} TYPES[] = {{SKYCMD_TYPE_F32, "F32", 1e-4}, {SKYCMD_TYPE_F16, "F16", 1e-3}};
#define TOL_F16_ROUNDED 1e-4

/* Bodies laya's Agent refuses that the Jev protocol answers, and so do we (docs/compat.md
 * "Where we answer what laya refuses"): 1 = a noul without instructions, read with empty
 * ones; 2 = a choice whose markers do not fit one pass, answered by elimination in groups of
 * 16 (SKYCMD_OPT_AUTO_TOURNAMENT_GROUP; its rounds agree with laya serve's in test_long). */
static int jev_answers(const char *case_name) {
    if (strcmp(case_name, "error-no-instructions") == 0 || strcmp(case_name, "error-null-instructions") == 0)
        return 1;
    return strcmp(case_name, "error-markers-past-max-len") == 0 ? 2 : 0;
}

/* SKYCMD_GOLDEN_STRIDE=k: compare every k-th request only (an emulator, where each model's
 * whole set takes minutes: tools/test-arm64.sh); every model and file type still runs.
 * Default 1: every request. */
static size_t golden_stride(void) {
    const char *v = getenv("SKYCMD_GOLDEN_STRIDE");
    long k = v ? strtol(v, NULL, 10) : 1;
    return k > 1 ? (size_t)k : 1;
}

static void run_one_type(const golden_model *m, size_t ti, const char *gguf, const cJSON *fx,
                         const cJSON *reqs, stats *s) {
    /* a checkpoint with F32 weights on disk loses more to the F16 file than a F16 one does
     * (none): the manifest may widen that one bound (f16_tolerance); the bound against laya
     * on the same F16-rounded weights stays TOL_F16_ROUNDED */
    const double tol = ti == 1 && m->f16_tol > 0 ? m->f16_tol : TYPES[ti].tol;
    const char *tname = TYPES[ti].name;
    const char *name = m->name;
    skycmd_model *model = NULL;
    skycmd_error *err = skycmd_error_new();
    /* SKYCMD_GOLDEN_WEIGHTS=bf16x3 runs the same bounds on the AMX-BF16 mode (by hand: the
     * mode is opt-in; see docs/performance.md) */
    const char *gw = getenv("SKYCMD_GOLDEN_WEIGHTS");
    skycmd_options *gopt = NULL;
    if (gw && !strcmp(gw, "bf16x3")) {
        gopt = skycmd_options_new();
        cr_assert_eq(skycmd_options_set_int(gopt, SKYCMD_OPT_WEIGHTS, SKYCMD_WEIGHTS_BF16X3), SKYCMD_OK);
        cr_log_info("%s %s: weights mode bf16x3 (cpu: %s)", name, tname, skycmd_cpu_features());
    }
    int st = skycmd_model_open(gguf, gopt, &model, err);
    skycmd_options_free(gopt);
    cr_assert_eq(st, SKYCMD_OK, "%s %s: skycmd_model_open: %s: %s", name, tname,
                 skycmd_status_name(st), skycmd_error_message(err));
    skycmd_error_free(err);
    skycmd_session *sess = NULL;
    cr_assert_eq(skycmd_session_new(model, &sess), SKYCMD_OK);

    int64_t max_len = 0, head_max = 0;
    cr_assert_eq(skycmd_model_get_int(model, "decision.max_tokens", &max_len), SKYCMD_OK);
    cr_assert_eq(skycmd_model_get_int(model, "decision.max_head_tokens", &head_max), SKYCMD_OK);
    cr_assert_eq(max_len, (int64_t)jnum(fx, "max_len"), "%s: decision.max_tokens", name);
    cr_assert_eq(head_max, (int64_t)jnum(fx, "head_max_len"), "%s: decision.max_head_tokens", name);
    const skycmd_tokenizer *tok = skycmd_model_tokenizer(model);
    cr_assert(tok != NULL);
    tu_tok_ctx tc = {tok, {0}};
    sk_prompt_tok pt = tu_prompt_tok(&tc);
    const cJSON *sp = cJSON_GetObjectItemCaseSensitive(fx, "special_ids");
    cr_assert_eq(pt.cls, (int32_t)jnum(sp, "cls"), "%s: [CLS] id", name);
    cr_assert_eq(pt.sep, (int32_t)jnum(sp, "sep"), "%s: [SEP] id", name);
    cr_assert_eq(pt.mask, (int32_t)jnum(sp, "mask"), "%s: [MASK] id", name);
    sk_prompt_ws ws = {0};
    sk_i32v sids = {0}, ids = {0}, marks = {0};
    const int check_ids = 1;

    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(fx, "cases");
    const cJSON *rq = reqs->child, *cs = cases->child;
    const size_t stride = golden_stride();
    for (size_t index = 0; rq && cs; rq = rq->next, cs = cs->next, index++) {
        if (index % stride != 0)
            continue;
        const char *cname = cJSON_GetObjectItemCaseSensitive(rq, "name")->valuestring;
        const char *body = cJSON_GetObjectItemCaseSensitive(rq, "body")->valuestring;
        /* laya's verdict is the fixture's: a request sized to be refused by the 256-token
         * models is answered by one with a larger budget (its fixture then has answers) */
        int expect_error = cJSON_IsString(cJSON_GetObjectItemCaseSensitive(cs, "error"));
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rq, "expect_error")) && !expect_error)
            cr_assert(max_len > 512, "%s: %s: laya answered a request meant to be refused", name, cname);
        cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(cs, "name")->valuestring, cname);

        skycmd_request *req = NULL;
        int pst = skycmd_request_parse(body, strlen(body), &req);
        skycmd_response *resp = NULL;
        if (expect_error) {
            const cJSON *perr = cJSON_GetObjectItemCaseSensitive(cs, "error");
            cr_assert(cJSON_IsString(perr), "%s: the fixture has no laya error", cname);
            int dst = pst == SKYCMD_OK ? skycmd_decide(sess, req, &resp) : pst;
            int jev = jev_answers(cname);
            if (jev && dst != SKYCMD_OK)
                fail_soft(s, "%s %s %s: laya refuses this body, the Jev protocol answers it and so "
                          "must we: %s: %s", name, tname, cname, skycmd_status_name(dst),
                          pst == SKYCMD_OK ? skycmd_session_errmsg(sess) : skycmd_request_errmsg(req));
            else if (jev == 2 && skycmd_response_answer_rounds(resp, 0) < 1)
                fail_soft(s, "%s %s %s: the choice that does not fit one pass was not answered by "
                          "elimination", name, tname, cname);
            else if (!jev && dst == SKYCMD_OK)
                fail_soft(s, "%s %s %s: laya refuses this body (%s); we accepted it", name, tname,
                          cname, perr->valuestring);
            skycmd_response_free(resp);
            skycmd_request_free(req);
            s->n_errors++;
            continue;
        }
        if (pst != SKYCMD_OK) {
            fail_soft(s, "%s %s %s: laya accepts this body; skycmd_request_parse: %s: %s", name, tname,
                      cname, skycmd_status_name(pst), req ? skycmd_request_errmsg(req) : "");
            skycmd_request_free(req);
            continue;
        }
        int dst = skycmd_decide(sess, req, &resp);
        if (dst != SKYCMD_OK) {
            fail_soft(s, "%s %s %s: skycmd_decide: %s: %s", name, tname, cname,
                      skycmd_status_name(dst), skycmd_session_errmsg(sess));
            skycmd_request_free(req);
            continue;
        }
        s->n_requests++;
        const cJSON *qs = cJSON_GetObjectItemCaseSensitive(cs, "questions");
        cr_assert_eq(skycmd_response_answer_count(resp), (size_t)cJSON_GetArraySize(qs),
                     "%s: %s: answer count", name, cname);
        if (skycmd_response_input_tokens(resp) != (int64_t)jnum(cs, "input_tokens"))
            fail_soft(s, "%s %s %s: usage.input_tokens %lld, laya %d", name, tname, cname,
                      (long long)skycmd_response_input_tokens(resp), (int)jnum(cs, "input_tokens"));

        /* token ids and markers: the request as sk_request_parse renders it, through the
         * prompt builder on the model's tokenizer (exactly what skycmd_decide runs) */
        sk_request ir;
        sk_err ie = {0};
        int have_ir = 0;
        if (check_ids) {
            int rst = sk_request_parse(body, strlen(body), &ir, &ie);
            cr_assert_eq(rst, SKYCMD_OK, "%s: sk_request_parse: %s", cname, ie.msg);
            have_ir = 1;
            cr_assert_eq(ir.nq, (size_t)cJSON_GetArraySize(qs));
            cr_assert_eq(sk_prompt_state_ids(&pt, ir.state.s, ir.state.n, &ws, &sids, &ie), SKYCMD_OK,
                         "%s: state ids: %s", cname, ie.msg);
        }

        size_t qi = 0;
        const cJSON *q;
        cJSON_ArrayForEach(q, qs) {
            char where[240], why[200];
            const char *qid = cJSON_GetObjectItemCaseSensitive(q, "id")->valuestring;
            const char *qtype = cJSON_GetObjectItemCaseSensitive(q, "type")->valuestring;
            snprintf(where, sizeof where, "%s %s %s/%s", name, tname, cname, qid);
            s->n_questions++;

            if (check_ids) {
                const sk_rquestion *rq2 = &ir.q[qi];
                cr_assert(rq2->id.n == strlen(qid) && memcmp(rq2->id.s, qid, rq2->id.n) == 0,
                          "%s: question order", where);
                /* an option_order lays the options out in slot order, as the session does */
                int bst = sk_prompt_build(&pt, sk_qtype_names[rq2->type], rq2->ins.s, rq2->ins.n,
                                          rq2->order ? rq2->slot_text : &rq2->opts[0].text,
                                          rq2->order ? sizeof(sk_jstr) : sizeof(sk_roption),
                                          rq2->n_opts, sids.v,
                                          sids.n, ir.state_is_list,
                                          /* a body's budgets (laya serve's max_len / head_max_len) */
                                          (ir.ctl_set & SK_CTL_MAX_LEN) ? (size_t)ir.ctl_max_len : (size_t)max_len,
                                          (ir.ctl_set & SK_CTL_HEAD_MAX_LEN) ? (size_t)ir.ctl_head_max_len
                                                                             : (size_t)head_max,
                                          &ws, &ids, &marks, &ie);
                if (bst != SKYCMD_OK) {
                    fail_soft(s, "%s: sk_prompt_build: %s", where, ie.msg);
                } else {
                    if (!same_ints(cJSON_GetObjectItemCaseSensitive(q, "ids"), &ids, why, sizeof why))
                        fail_soft(s, "%s: token ids differ at %s", where, why);
                    if (!same_ints(cJSON_GetObjectItemCaseSensitive(q, "markers"), &marks, why,
                                   sizeof why))
                        fail_soft(s, "%s: markers differ at %s", where, why);
                    s->n_ids++;
                }
            }

            cr_assert_str_eq(skycmd_response_answer_id(resp, qi), qid, "%s: answer order", where);
            int want_type = strcmp(qtype, "choice") == 0  ? SKYCMD_QTYPE_CHOICE
                            : strcmp(qtype, "score") == 0 ? SKYCMD_QTYPE_SCORE
                                                          : SKYCMD_QTYPE_NOUL;
            cr_assert_eq(skycmd_response_answer_type(resp, qi), want_type, "%s: type", where);
            const cJSON *keys = cJSON_GetObjectItemCaseSensitive(q, "keys");
            const cJSON *probs = cJSON_GetObjectItemCaseSensitive(q, "probabilities");
            const cJSON *probs16 = cJSON_GetObjectItemCaseSensitive(q, "probabilities_f16w");
            size_t k = (size_t)cJSON_GetArraySize(probs);
            if (skycmd_response_option_count(resp, qi) != k) {
                fail_soft(s, "%s: %zu options, laya %zu", where, skycmd_response_option_count(resp, qi), k);
                qi++;
                continue;
            }
            double p_py[512];
            cr_assert(k <= 512);
            for (size_t j = 0; j < k; j++) {
                const char *key = cJSON_GetArrayItem(keys, (int)j)->valuestring;
                const char *ours = skycmd_response_option_key(resp, qi, j);
                if (!ours || strcmp(ours, key) != 0)
                    fail_soft(s, "%s: option %zu key \"%s\", laya \"%s\"", where, j, ours ? ours : "(null)",
                              key);
                p_py[j] = cJSON_GetArrayItem(probs, (int)j)->valuedouble;
                double p = skycmd_response_option_probability(resp, qi, j);
                double d = fabs(p - p_py[j]);
                if (!(d <= tol))
                    fail_soft(s, "%s: p[%s] = %.9g, laya %.9g (|d| %.3g > %.0e)", where, key, p, p_py[j], d,
                              tol);
                if (d > s->max_dp || d != d) {
                    s->max_dp = d;
                    snprintf(s->where_dp, sizeof s->where_dp, "%s/%s[%s]", cname, qid, key);
                }
                if (TYPES[ti].type == SKYCMD_TYPE_F16) {
                    cr_assert(cJSON_IsArray(probs16), "%s: fixture lacks probabilities_f16w", where);
                    double p16 = cJSON_GetArrayItem(probs16, (int)j)->valuedouble;
                    double d16 = fabs(p - p16);
                    if (!(d16 <= TOL_F16_ROUNDED)) s->n_fail_impl++;
                    if (!(d16 <= TOL_F16_ROUNDED))
                        fail_soft(s, "%s: p[%s] = %.9g, laya on F16-rounded weights %.9g (|d| %.3g > %.0e)",
                                  where, key, p, p16, d16, TOL_F16_ROUNDED);
                    if (d16 > s->max_dp16w || d16 != d16) {
                        s->max_dp16w = d16;
                        snprintf(s->where_dp16w, sizeof s->where_dp16w, "%s/%s[%s]", cname, qid, key);
                    }
                }
                s->n_prob++;
            }
            double value = skycmd_response_answer_value(resp, qi);
            if (want_type == SKYCMD_QTYPE_CHOICE) {
                const char *ch = skycmd_response_answer_choice(resp, qi);
                const char *want = cJSON_GetObjectItemCaseSensitive(q, "choice")->valuestring;
                /* an exact tie (identical options, as the parallel layout makes identical
                 * spans) is decided by float noise in laya: our choice then only has to be one
                 * of laya's maxima to within 1e-6 */
                double p_ch = -1.0, p_want = 2.0;
                const cJSON *fk = cJSON_GetObjectItemCaseSensitive(q, "keys");
                const cJSON *fp = cJSON_GetObjectItemCaseSensitive(q, "probabilities");
                for (int j = 0; ch && j < cJSON_GetArraySize(fk); j++) {
                    const char *kj = cJSON_GetArrayItem(fk, j)->valuestring;
                    if (strcmp(kj, ch) == 0) p_ch = cJSON_GetArrayItem(fp, j)->valuedouble;
                    if (strcmp(kj, want) == 0) p_want = cJSON_GetArrayItem(fp, j)->valuedouble;
                }
                if (ch && (strcmp(ch, want) == 0 || p_ch >= p_want - 1e-6)) s->n_choices++;
                else fail_soft(s, "%s: choice \"%s\", laya \"%s\"", where, ch ? ch : "(null)", want);
                double d = fabs(value - jnum(q, "value"));
                if (!(d <= tol)) fail_soft(s, "%s: p(choice) %.9g, laya %.9g", where, value, jnum(q, "value"));
            } else if (want_type == SKYCMD_QTYPE_SCORE) {
                double d = fabs(value - jnum(q, "score"));
                double bound = tol * (double)(k > 1 ? k - 1 : 1);
                if (!(d <= bound))
                    fail_soft(s, "%s: score %.9g, laya %.9g (|d| %.3g > %.3g)", where, value,
                              jnum(q, "score"), d, bound);
                if (d > s->max_dscore || d != d) s->max_dscore = d;
            } else {
                double d = fabs(value - jnum(q, "noul"));
                if (!(d <= tol)) fail_soft(s, "%s: noul %.9g, laya %.9g", where, value, jnum(q, "noul"));
                if (d > s->max_dnoul || d != d) s->max_dnoul = d;
            }
            const cJSON *cts = cJSON_GetObjectItemCaseSensitive(q, "confidence_typesafe");
            if (cts) {
                /* the score formula depends on the mode: skip a near tie of the top two */
                double top1 = -1, top2 = -1;
                for (size_t j = 0; j < k; j++) {
                    if (p_py[j] > top1) {
                        top2 = top1;
                        top1 = p_py[j];
                    } else if (p_py[j] > top2) {
                        top2 = p_py[j];
                    }
                }
                if (want_type == SKYCMD_QTYPE_CHOICE || k < 2 || top1 - top2 > 4 * tol) {
                    double c = skycmd_response_answer_confidence(resp, qi);
                    double d = fabs(c - cts->valuedouble);
                    if (!(d <= 10 * tol))
                        fail_soft(s, "%s: confidence %.9g, TypeSafe formula on laya's p %.9g", where, c,
                                  cts->valuedouble);
                    if (d > s->max_dconf || d != d) s->max_dconf = d;
                }
            }
            qi++;
        }
        if (have_ir) sk_request_free(&ir);
        skycmd_response_free(resp);
        skycmd_request_free(req);
    }
    sk_i32v_free(&sids);
    sk_i32v_free(&ids);
    sk_i32v_free(&marks);
    sk_prompt_ws_free(&ws);
    sk_ids_free(&tc.ids);
    skycmd_session_free(sess);
    cr_assert_eq(skycmd_model_free(model), SKYCMD_OK);
}

static void run_model(const char *name, size_t ti) {
    golden_model m;
    cr_assert_eq(find_model(name, &m), 0, "model %s is not in the golden manifest", name);
    cJSON *reqs = tu_load_json(GOLDEN_DIR "/requests.json");
    char fpath[512];
    snprintf(fpath, sizeof fpath, "%s/%s", GOLDEN_DIR, m.fixture);
    cJSON *fx = tu_load_json(fpath);
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(fx, "cases")),
                 cJSON_GetArraySize(reqs),
                 "%s: fixture and requests.json disagree on the number of cases", name);

    char dir[1024], laya_dir[1100], gguf[1200];
    tu_scratch_make(dir, sizeof dir, "golden", name);
    if (m.checkpoint[0]) {
        /* built by laya's and transformers' own classes: committed, read in place */
        char path[1400], hex[65];
        snprintf(laya_dir, sizeof laya_dir, "%s/%s", GOLDEN_DIR, m.checkpoint);
        snprintf(path, sizeof path, "%s/model.safetensors", laya_dir);
        cr_assert_eq(sha256_file(path, hex), 0, "cannot read %s", path);
        cr_assert_str_eq(hex, m.sha, "%s: model.safetensors is not the one the fixtures were "
                         "made from", name);
    } else {
        snprintf(laya_dir, sizeof laya_dir, "%s/laya", dir);
        regenerate(&m, laya_dir);
    }

    stats s;
    memset(&s, 0, sizeof s);
    snprintf(gguf, sizeof gguf, "%s/model-%s.gguf", dir, TYPES[ti].name);
    convert(&m, laya_dir, gguf, TYPES[ti].type);
    run_one_type(&m, ti, gguf, fx, reqs, &s);
    report(&m, TYPES[ti].name, ti == 1 && m.f16_tol > 0 ? m.f16_tol : TYPES[ti].tol, &s);
    tu_scratch_remove();
    cJSON_Delete(fx);
    cJSON_Delete(reqs);
    cr_assert_eq(s.n_fail, 0, "%s %s: %zu mismatches with the Python reference (%zu of them against "
                 "laya on F16-rounded weights); first: %s",
                 name, TYPES[ti].name, s.n_fail, s.n_fail_impl, s.first_fail);
    const size_t least = 40 / golden_stride();
    cr_assert_geq(s.n_requests, least, "%s %s: fewer than %zu requests compared", name,
                  TYPES[ti].name, least);
    cr_assert_eq(s.n_ids, s.n_questions, "%s %s: ids compared for %zu of %zu questions", name,
                 TYPES[ti].name, s.n_ids, s.n_questions);
}

Test(golden, manifest_is_complete) {
    cJSON *man = tu_load_json(GOLDEN_DIR "/manifest.json");
    cJSON *reqs = tu_load_json(GOLDEN_DIR "/requests.json");
    cr_assert_geq(cJSON_GetArraySize(reqs), 40);
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(man, "models")), 10,
                 "test_golden.c runs ten models; the manifest lists a different number");
    cJSON_Delete(man);
    cJSON_Delete(reqs);
}

#define GOLDEN_TESTS(id, model)                                                          \
    Test(golden, id##_f32, .timeout = 900, .fini = tu_scratch_remove) { run_model(model, 0); }  \
    Test(golden, id##_f16, .timeout = 900, .fini = tu_scratch_remove) { run_model(model, 1); }

GOLDEN_TESTS(s1_pico, "s1-pico")
GOLDEN_TESTS(s1_nano_massive, "s1-nano-massive")
GOLDEN_TESTS(s1_micro, "s1-micro")
GOLDEN_TESTS(s1_pico_xt, "s1-pico-xt")
GOLDEN_TESTS(s1_pico_clamp, "s1-pico-clamp")
/* checkpoints built by laya's and transformers' own classes (tools/golden/make_golden.py
 * LAYA_BUILT): several heads, odd windows, both config spellings, F16/F32/BF16 on disk, a
 * padded vocabulary, no head_max_len, one and two decision blocks */
GOLDEN_TESTS(laya_4x_f16_padded, "laya-4x-f16-padded")
GOLDEN_TESTS(laya_5x_f32_d128, "laya-5x-f32-d128")
GOLDEN_TESTS(laya_5x_bf16_odd, "laya-5x-bf16-odd")
/* laya's parallel option layout (options share positions, masked from each other) */
GOLDEN_TESTS(laya_parallel, "laya-parallel")
/* mmBERT's shape (head_dim 64, both RoPE bases 160000, max_len 1024 / head_max_len 256) with
 * the Gemma-style SentencePiece tokenizer (byte fallback; <bos> CLS, <eos> SEP, <mask>) */
GOLDEN_TESTS(mmbert_tiny, "mmbert-tiny")
