/* test_decide.c - temperatures, softmax, answers, confidences, the response envelope, and
 * the decide ABI end to end on a random model.
 *
 * Expected numbers are worked by hand from the definitions (laya.common.temp_bucket /
 * clamp_temperature, llama.cpp decision_confidence_choice / _score) or computed with
 * Python's math module (softmax constants); the end-to-end test recomputes every answer
 * from the model's raw scorer logits independently of the decide path. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "skycmd.h"
#include "decide/decide.h"
#include "decide/request.h"
#include "gguf/gguf.h"
#include "test_util.h"

#define NEAR(a, b, tol) cr_expect(fabs((a) - (b)) <= (tol), "%s = %.17g, want %.17g", #a, (double)(a), (double)(b))

Test(decide, clamp_and_buckets) {
    cr_expect_eq(sk_clamp_temperature(0.10058280825614929), 0.5);
    cr_expect_eq(sk_clamp_temperature(7.5), 5.0);
    cr_expect_eq(sk_clamp_temperature(1.37), 1.37);
    cr_expect_eq(sk_clamp_temperature(0.0), 0.5);
    cr_expect_eq(sk_clamp_temperature(-3.0), 0.5);
    cr_expect_eq(sk_clamp_temperature(NAN), 1.0);
    cr_expect_eq(sk_clamp_temperature(INFINITY), 1.0);
    cr_expect_eq(sk_clamp_temperature(-INFINITY), 1.0);
    size_t ks[] = {1, 2, 3, 5, 6, 10, 11, 255};
    int want[] = {1, 1, 2, 2, 3, 3, 4, 4};
    for (size_t i = 0; i < 8; i++) cr_expect_eq(sk_temp_bucket(ks[i]), want[i], "k=%zu", ks[i]);
}

Test(decide, temperatures_from_gguf_and_lookup) {
    sk_gguf_writer *w = sk_gguf_writer_new(0);
    cr_assert(w);
    sk_gguf_writer_add_str(w, "general.architecture", "modern-bert");
    sk_gguf_writer_add_f32(w, "modern-bert.decision.temperature.choice", 0.2f);      /* -> 0.5 */
    sk_gguf_writer_add_f32(w, "modern-bert.decision.temperature.choice.11", 0.1006f); /* -> 0.5 */
    sk_gguf_writer_add_f32(w, "modern-bert.decision.temperature.choice.3_5", 2.5f);
    sk_gguf_writer_add_f32(w, "modern-bert.decision.temperature.score.6_10", 4.99f);
    sk_gguf_writer_add_f32(w, "modern-bert.decision.temperature.score", 7.5f);        /* -> 5 */
    sk_gguf_writer_add_str(w, "modern-bert.decision.temperature.noul", "warm");      /* -> 1 */
    sk_gguf_writer_add_u32(w, "modern-bert.decision.temperature.noul.2", 3);
    sk_gguf_writer_add_f32(w, "modern-bert.decision.temperature.choice.12", 3.0f);   /* ignored */
    sk_gguf_writer_add_f32(w, "modern-bert.decision.temperature.choices", 3.0f);     /* ignored */
    sk_gguf_writer_add_f32(w, "other.decision.temperature.choice.2", 3.0f);          /* ignored */
    uint8_t *mem = NULL;
    size_t size = 0;
    sk_err e = {0};
    cr_assert_eq(sk_gguf_writer_write_mem(w, &mem, &size, &e), 0, "%s", e.msg);
    sk_gguf *g = NULL;
    cr_assert_eq(sk_gguf_open_buffer(mem, size, &g, &e), 0, "%s", e.msg);
    sk_temps t;
    sk_temps_from_gguf(g, "modern-bert", &t);
    cr_expect_eq(sk_temp_for(&t, SKYCMD_QTYPE_CHOICE, 2), 0.5);   /* no choice.2: type value */
    cr_expect_eq(sk_temp_for(&t, SKYCMD_QTYPE_CHOICE, 4), 2.5);   /* bucket 3_5 */
    cr_expect_eq(sk_temp_for(&t, SKYCMD_QTYPE_CHOICE, 30), 0.5);  /* bucket 11, clamped */
    cr_expect_eq(sk_temp_for(&t, SKYCMD_QTYPE_CHOICE, 8), 0.5);   /* 6_10 absent: type */
    cr_expect_eq(sk_temp_for(&t, SKYCMD_QTYPE_SCORE, 7), (double)4.99f);
    cr_expect_eq(sk_temp_for(&t, SKYCMD_QTYPE_SCORE, 3), 5.0);
    cr_expect_eq(sk_temp_for(&t, SKYCMD_QTYPE_NOUL, 2), 3.0);
    cr_expect_eq(sk_temp_for(&t, SKYCMD_QTYPE_NOUL, 3), 1.0);     /* "warm" is no number */
    sk_temps none;
    sk_temps_init(&none);
    cr_expect_eq(sk_temp_for(&none, SKYCMD_QTYPE_SCORE, 3), 1.0);  /* Python's default */
    sk_gguf_close(g);
    free(mem);
    sk_gguf_writer_free(w);
}

Test(decide, softmax_values) {
    float z[3] = {1, 2, 3};
    double p[3];
    sk_softmax(z, 3, 1.0, p);
    NEAR(p[0], 0.09003057317038046, 1e-16);
    NEAR(p[1], 0.24472847105479764, 1e-16);
    NEAR(p[2], 0.6652409557748218, 1e-16);
    sk_softmax(z, 3, 2.0, p);
    NEAR(p[0], 0.1863237232258476, 1e-16);
    NEAR(p[1], 0.3071958857184984, 1e-16);
    NEAR(p[2], 0.506480391055654, 1e-16);
    float z2[2] = {-0.5f, 0.25f};
    sk_softmax(z2, 2, 0.5, p);
    NEAR(p[0], 0.18242552380635632, 1e-16);
    NEAR(p[1], 0.8175744761936437, 1e-16);
    /* huge logits do not overflow (max-subtracted) */
    float z3[2] = {1e30f, 1e30f};
    sk_softmax(z3, 2, 0.5, p);
    NEAR(p[0], 0.5, 0);
}

Test(decide, confidences) {
    double a[2] = {0.75, 0.25};
    NEAR(sk_conf_choice(a, 2), 0.5, 1e-15);
    double one[1] = {1.0};
    cr_expect_eq(sk_conf_choice(one, 1), 1.0);
    cr_expect_eq(sk_conf_score(one, 1), 1.0);
    double u3[3] = {1.0 / 3, 1.0 / 3, 1.0 / 3};
    NEAR(sk_conf_choice(u3, 3), 0.0, 1e-15);
    double b[3] = {0.2, 0.5, 0.3};
    NEAR(sk_conf_choice(b, 3), 0.25, 1e-15);   /* (0.5 - 1/3) / (2/3) */
    double s1[3] = {0.5, 0.25, 0.25};
    cr_expect_eq(sk_conf_score(s1, 3), 0.0);   /* 1 - 0.75 / (2/3) < 0 */
    double s2[3] = {0.1, 0.8, 0.1};
    NEAR(sk_conf_score(s2, 3), 0.7, 1e-15);    /* 1 - 0.2 / (2/3) */
    double s3[4] = {1, 0, 0, 0};
    cr_expect_eq(sk_conf_score(s3, 4), 1.0);
    double s4[4] = {0.25, 0.25, 0.25, 0.25};
    cr_expect_eq(sk_conf_score(s4, 4), 0.0);   /* mode 0: 1.5 / 1.0 */
    double s5[5] = {0.0, 0.1, 0.6, 0.3, 0.0};
    NEAR(sk_conf_score(s5, 5), 1.0 - 0.4 / 1.2, 1e-15); /* dist .1+.3, dist_u (2+1+0+1+2)/5 */
}

Test(decide, answers_and_envelope) {
    const char *j = "{\"state\":\"s\",\"questions\":{"
                    "\"action\":{\"type\":\"choice\",\"instructions\":\"i\",\"criteria\":{\"thrust\":\"up\",\"glide\":\"down\"}},"
                    "\"danger\":{\"type\":\"noul\",\"instructions\":\"i\"},"
                    "\"margin\":{\"type\":\"score\",\"instructions\":\"i\",\"criteria\":[\"none\",\"tight\",{\"x\":1.50}]},"
                    "\"tie\":{\"type\":\"choice\",\"instructions\":\"i\",\"criteria\":[\"a\",\"b\",\"c\"]}}}";
    sk_request r;
    sk_err e = {0};
    cr_assert_eq(sk_request_parse(j, strlen(j), &r, &e), 0, "%s", e.msg);
    double pa[2] = {0.75, 0.25}, pd[2] = {0.875, 0.125}, pm[3] = {0.5, 0.25, 0.25},
           pt[3] = {0.4, 0.4, 0.2};
    sk_answer an[4];
    cr_assert_eq(sk_answer_from_probs(SKYCMD_QTYPE_CHOICE, pa, 2, &an[0], &e), 0);
    cr_assert_eq(sk_answer_from_probs(SKYCMD_QTYPE_NOUL, pd, 2, &an[1], &e), 0);
    cr_assert_eq(sk_answer_from_probs(SKYCMD_QTYPE_SCORE, pm, 3, &an[2], &e), 0);
    cr_assert_eq(sk_answer_from_probs(SKYCMD_QTYPE_CHOICE, pt, 3, &an[3], &e), 0);
    cr_expect_eq(an[0].best, 0);
    cr_expect_eq(an[0].value, 0.75);
    cr_expect_eq(an[1].value, 0.125);
    cr_expect(isnan(an[1].confidence));
    cr_expect_eq(an[2].value, 0.75);
    cr_expect_eq(an[3].best, 0); /* first of a tie wins, like std::max_element */
    /* the copies outlive the request: write the JSON after freeing it */
    sk_arena arena = {0};
    const sk_answer_json *aj = sk_answer_json_copy(&r, an, &arena);
    cr_assert(aj != NULL);
    sk_request_free(&r);
    sk_buf b;
    sk_buf_init(&b);
    /* per-level legends: a string as its text, another value as its compact JSON */
    cr_expect_null(aj[0].level_legends);
    cr_expect_null(aj[1].level_legends);
    cr_assert(aj[2].level_legends != NULL);
    cr_expect_str_eq(aj[2].level_legends[0], "none");
    cr_expect_str_eq(aj[2].level_legends[1], "tight");
    cr_expect_str_eq(aj[2].level_legends[2], "{\"x\":1.50}");
    sk_response_json_write(&b, "s1-pico", aj, 4, 42);
    char *got = sk_buf_detach(&b);
    sk_arena_free(&arena);
    cr_expect_str_eq(got,
        "{\"model\":\"s1-pico\",\"answers\":{"
        "\"action\":{\"type\":\"choice\",\"choice\":\"thrust\",\"probabilities\":{\"thrust\":0.75,\"glide\":0.25},\"confidence\":0.5},"
        "\"danger\":{\"type\":\"noul\",\"noul\":0.125},"
        "\"margin\":{\"type\":\"score\",\"score\":0.75,\"legend\":{\"0\":\"none\",\"1\":\"tight\",\"2\":{\"x\":1.50}},"
        "\"probabilities\":{\"0\":0.5,\"1\":0.25,\"2\":0.25},\"confidence\":0.0},"
        "\"tie\":{\"type\":\"choice\",\"choice\":\"a\",\"probabilities\":{\"a\":0.4,\"b\":0.4,\"c\":0.2},\"confidence\":0.10000000000000005}},"
        "\"usage\":{\"input_tokens\":42,\"output_tokens\":0}}");
    cJSON *doc = cJSON_Parse(got);
    cr_expect(doc != NULL, "the response is valid JSON");
    cJSON_Delete(doc);
    free(got);
    double bad[2] = {NAN, 0.5};
    cr_expect_eq(sk_answer_from_probs(SKYCMD_QTYPE_CHOICE, bad, 2, &an[0], &e), SKYCMD_E_INTERNAL);
    cr_expect_str_eq(e.msg, "the model could not evaluate the decision");
}

/* ---------------------------------------------------------------- end to end ---- */

static skycmd_model *random_model(const char *path) {
    skycmd_options *o = skycmd_options_new();
    skycmd_options_set_int(o, SKYCMD_OPT_SEED, 5);
    skycmd_error *err = skycmd_error_new();
    int st = skycmd_random_model("s1-pico", path, o, err);
    if (st) {
        cr_log_warn("random model unavailable: %s", skycmd_error_message(err));
        skycmd_options_free(o);
        skycmd_error_free(err);
        return NULL;
    }
    skycmd_model *m = NULL;
    skycmd_options_set_string(o, SKYCMD_OPT_MODEL_NAME, "pico-test");
    st = skycmd_model_open(path, o, &m, err);
    cr_assert_eq(st, 0, "%s", skycmd_error_message(err));
    skycmd_options_free(o);
    skycmd_error_free(err);
    return m;
}

Test(decide, end_to_end_random_model) {
    char path[256];
    snprintf(path, sizeof path, "%s/test_decide_pico_%d.gguf", SKYCMD_BINARY_DIR, (int)getpid());
    skycmd_model *m = random_model(path);
    if (!m) cr_skip_test("skycmd_random_model is not available in this build");
    cr_expect_str_eq(skycmd_model_name(m), "pico-test");
    int64_t v;
    cr_expect_eq(skycmd_model_get_int(m, "decision.max_head_tokens", &v), 0);
    cr_expect_gt(v, 0);
    cr_expect_eq(skycmd_model_get_int(m, "no.such.key", &v), SKYCMD_E_NOT_FOUND);
    skycmd_session *s = NULL;
    cr_assert_eq(skycmd_session_new(m, &s), 0);
    cr_expect_eq(skycmd_model_free(m), SKYCMD_E_BUSY, "a model with sessions is not freed");

    size_t body_len = 0;
    char *body = tu_slurp(SKYCMD_SOURCE_DIR "/examples/flappy-drone.json", &body_len);
    cr_assert_gt(body_len, 0);
    skycmd_request *req = NULL;
    cr_assert_eq(skycmd_request_parse(body, strlen(body), &req), 0, "%s", skycmd_request_errmsg(req));
    cr_expect_eq(skycmd_request_question_count(req), 3);
    skycmd_response *resp = NULL;
    cr_assert_eq(skycmd_decide(s, req, &resp), 0, "%s", skycmd_session_errmsg(s));
    skycmd_request_free(req); /* the response must not depend on the request */
    cr_assert_eq(skycmd_response_answer_count(resp), 3);
    const char *ids[3] = {"action", "danger", "margin"};
    int types[3] = {SKYCMD_QTYPE_CHOICE, SKYCMD_QTYPE_NOUL, SKYCMD_QTYPE_SCORE};
    for (size_t i = 0; i < 3; i++) {
        cr_expect_str_eq(skycmd_response_answer_id(resp, i), ids[i]);
        cr_expect_eq(skycmd_response_answer_type(resp, i), types[i]);
        double sum = 0;
        size_t n = skycmd_response_option_count(resp, i);
        for (size_t jj = 0; jj < n; jj++) sum += skycmd_response_option_probability(resp, i, jj);
        NEAR(sum, 1.0, 1e-12);
    }
    cr_expect_str_eq(skycmd_response_option_key(resp, 1, 0), "false");
    cr_expect_str_eq(skycmd_response_option_key(resp, 1, 1), "true");
    NEAR(skycmd_response_answer_value(resp, 1), skycmd_response_option_probability(resp, 1, 1), 0);
    double p0 = skycmd_response_option_probability(resp, 0, 0), p1 = skycmd_response_option_probability(resp, 0, 1);
    cr_expect_str_eq(skycmd_response_answer_choice(resp, 0), p1 > p0 ? "glide" : "thrust");
    NEAR(skycmd_response_answer_confidence(resp, 0), fabs(p0 - p1), 1e-12); /* (pmax-1/2)/(1/2) */
    double exp_score = 0;
    for (size_t jj = 0; jj < 3; jj++) exp_score += (double)jj * skycmd_response_option_probability(resp, 2, jj);
    NEAR(skycmd_response_answer_value(resp, 2), exp_score, 1e-15);
    cr_expect(isnan(skycmd_response_answer_confidence(resp, 1)));
    cr_expect_null(skycmd_response_answer_id(resp, 3));
    cr_expect(isnan(skycmd_response_option_probability(resp, 0, 2)));
    /* the JSON carries the same numbers and shape */
    cJSON *doc = cJSON_Parse(skycmd_response_json(resp));
    cr_assert(doc);
    cr_expect_str_eq(cJSON_GetObjectItem(doc, "model")->valuestring, "pico-test");
    cJSON *usage = cJSON_GetObjectItem(doc, "usage");
    cr_expect_eq(cJSON_GetArraySize(doc), 3);
    cr_expect_eq(cJSON_GetArraySize(usage), 2);
    cr_expect_eq((int64_t)cJSON_GetObjectItem(usage, "input_tokens")->valuedouble,
                 skycmd_response_input_tokens(resp));
    cr_expect_gt(skycmd_response_input_tokens(resp), 30);
    cJSON *danger = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "answers"), "danger");
    cr_expect_eq(cJSON_GetObjectItem(danger, "noul")->valuedouble, skycmd_response_answer_value(resp, 1));
    /* the typed model name and score legend say what the wire says */
    cr_expect_str_eq(skycmd_response_model(resp), "pico-test");
    cJSON *legend = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "answers"), "margin"), "legend");
    cr_assert_eq(cJSON_GetArraySize(legend), 3);
    const char *levels[3] = {"none", "tight", "comfortable"};
    for (size_t jj = 0; jj < 3; jj++) {
        cr_expect_str_eq(skycmd_response_option_legend(resp, 2, jj), levels[jj]);
        cr_expect_str_eq(cJSON_GetObjectItem(legend, skycmd_response_option_key(resp, 2, jj))->valuestring,
                         skycmd_response_option_legend(resp, 2, jj));
    }
    cr_expect_null(skycmd_response_option_legend(resp, 2, 3));
    cr_expect_null(skycmd_response_option_legend(resp, 0, 0), "a choice answer has no legend");
    cr_expect_null(skycmd_response_option_legend(resp, 1, 0), "a noul answer has no legend");
    cr_expect_null(skycmd_response_option_legend(resp, 3, 0));
    cJSON_Delete(doc);

    /* decide_json gives the same document; a second call reuses the warm session */
    char *js = NULL;
    cr_assert_eq(skycmd_decide_json(s, body, strlen(body), &js), 0, "%s", skycmd_session_errmsg(s));
    cr_expect_str_eq(js, skycmd_response_json(resp));
    skycmd_string_free(js);
    /* more compute threads give the same answers, bit for bit */
    cr_assert_eq(skycmd_session_set_int(s, SKYCMD_OPT_THREADS, 3), 0, "%s", skycmd_session_errmsg(s));
    cr_assert_eq(skycmd_decide_json(s, body, strlen(body), &js), 0, "%s", skycmd_session_errmsg(s));
    cr_expect_str_eq(js, skycmd_response_json(resp));
    skycmd_string_free(js);
    cr_expect_eq(skycmd_session_set_int(s, SKYCMD_OPT_THREADS, 1), 0);
    skycmd_response_free(resp);

    /* request errors land in the session */
    cr_expect_eq(skycmd_decide_json(s, "{\"state\":1}", 11, &js), SKYCMD_E_REQUEST);
    cr_expect_null(js);
    cr_expect_str_eq(skycmd_session_errmsg(s), "\"questions\" must be a non-empty object");
    cr_expect_eq(skycmd_decide_json(s, "{", 1, &js), SKYCMD_E_JSON);
    /* misuse */
    cr_expect_eq(skycmd_decide(NULL, NULL, &resp), SKYCMD_E_MISUSE);
    cr_expect_eq(skycmd_decide(s, NULL, &resp), SKYCMD_E_MISUSE);
    cr_expect_eq(skycmd_decide(s, (const skycmd_request *)s, &resp), SKYCMD_E_MISUSE);
    cr_expect_eq(skycmd_session_set_int(s, SKYCMD_OPT_THREADS, 2), 0);
    cr_expect_eq(skycmd_session_set_int(s, SKYCMD_OPT_SEED, 2), SKYCMD_E_INVALID_ARGUMENT);
    cr_expect_eq(skycmd_model_free((skycmd_model *)s), SKYCMD_E_MISUSE);
    skycmd_session_free(s);
    cr_expect_eq(skycmd_model_free(m), 0);
    free(body);
    unlink(path);
}

Test(decide, null_safety) {
    cr_expect_eq(skycmd_model_free(NULL), 0);
    cr_expect_null(skycmd_model_name(NULL));
    cr_expect_null(skycmd_model_tokenizer(NULL));
    int64_t v;
    cr_expect_eq(skycmd_model_get_int(NULL, "x", &v), SKYCMD_E_MISUSE);
    skycmd_session *s = (skycmd_session *)1;
    cr_expect_eq(skycmd_session_new(NULL, &s), SKYCMD_E_MISUSE);
    cr_expect_null(s);
    skycmd_session_free(NULL);
    cr_expect_str_eq(skycmd_session_errmsg(NULL), "invalid skycmd_session handle");
    char *out = (char *)1;
    cr_expect_eq(skycmd_decide_json(NULL, "{}", 2, &out), SKYCMD_E_MISUSE);
    cr_expect_null(out);
    skycmd_response_free(NULL);
    cr_expect_null(skycmd_response_json(NULL));
    cr_expect_eq(skycmd_response_answer_count(NULL), 0);
    cr_expect_null(skycmd_response_model(NULL));
    cr_expect_null(skycmd_response_option_legend(NULL, 0, 0));
    cr_expect_eq(skycmd_response_input_tokens(NULL), -1);
    cr_expect_eq(skycmd_response_answer_type(NULL, 0), -1);
    cr_expect(isnan(skycmd_response_answer_value(NULL, 0)));
    skycmd_model *m = (skycmd_model *)1;
    skycmd_error *err = skycmd_error_new();
    cr_expect_eq(skycmd_model_open("/nonexistent/x.gguf", NULL, &m, err), SKYCMD_E_IO);
    cr_expect_null(m);
    cr_expect(strstr(skycmd_error_message(err), "x.gguf") != NULL, "%s", skycmd_error_message(err));
    cr_expect_eq(skycmd_model_open_buffer("GGUF", 4, NULL, &m, err), SKYCMD_E_FORMAT);
    /* a success clears what an earlier failure left in err, skycmd_check_version's too */
    cr_expect_eq(skycmd_check_version(SKYCMD_VERSION_NUMBER, err), SKYCMD_OK);
    cr_expect_eq(skycmd_error_status(err), SKYCMD_OK);
    cr_expect_str_eq(skycmd_error_message(err), "");
    skycmd_error_free(err);
}

/* One model, several threads, one session each: every thread gets the single-threaded
 * answer (the model is immutable and shared). */
#include <pthread.h>

typedef struct thr_arg {
    skycmd_model *m;
    const char *body;
    const char *want;
    int bad;
} thr_arg;

static void *thr_main(void *p) {
    thr_arg *a = p;
    skycmd_session *s = NULL;
    if (skycmd_session_new(a->m, &s)) {
        a->bad = 1000;
        return NULL;
    }
    for (int i = 0; i < 10; i++) {
        char *js = NULL;
        if (skycmd_decide_json(s, a->body, strlen(a->body), &js) || strcmp(js, a->want) != 0) a->bad++;
        skycmd_string_free(js);
    }
    skycmd_session_free(s);
    return NULL;
}

Test(decide, shared_model_threads) {
    char path[256];
    snprintf(path, sizeof path, "%s/test_decide_thr_%d.gguf", SKYCMD_BINARY_DIR, (int)getpid());
    skycmd_model *m = random_model(path);
    if (!m) cr_skip_test("skycmd_random_model is not available in this build");
    const char *body = "{\"state\":{\"k\":[1,2.5,\"x\"]},\"questions\":{"
                       "\"a\":{\"type\":\"choice\",\"instructions\":\"which\",\"criteria\":[\"p\",\"q\",\"r\"]},"
                       "\"b\":{\"type\":\"score\",\"instructions\":\"how\",\"criteria\":[\"lo\",\"mid\",\"hi\"]}}}";
    skycmd_session *s = NULL;
    cr_assert_eq(skycmd_session_new(m, &s), 0);
    char *want = NULL;
    cr_assert_eq(skycmd_decide_json(s, body, strlen(body), &want), 0, "%s", skycmd_session_errmsg(s));
    skycmd_session_free(s);
    pthread_t t[4];
    thr_arg a[4];
    for (int i = 0; i < 4; i++) {
        a[i] = (thr_arg){m, body, want, 0};
        cr_assert_eq(pthread_create(&t[i], NULL, thr_main, &a[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        cr_expect_eq(a[i].bad, 0, "thread %d: %d answers differ", i, a[i].bad);
    }
    skycmd_string_free(want);
    cr_expect_eq(skycmd_model_free(m), 0);
    unlink(path);
}

/* A model whose tokenizer has more tokens than token_embd.weight has rows is refused at
 * open, naming both (it would otherwise load and then fail every request meeting a token
 * past the table; issue 16). */
Test(decide, tokenizer_ids_past_the_embedding_rows_are_refused_at_open) {
    char path[256];
    snprintf(path, sizeof path, "%s/test_decide_rows_%d.gguf", SKYCMD_BINARY_DIR, (int)getpid());
    skycmd_error *err = skycmd_error_new();
    cr_assert_eq(skycmd_random_model("s1-pico", path, NULL, err), SKYCMD_OK, "%s",
                 skycmd_error_message(err));
    sk_err e = {0};
    sk_gguf *g = NULL;
    cr_assert_eq(sk_gguf_open_file(path, &g, &e), SKYCMD_OK, "%s", e.msg);
    sk_gguf_writer *w = sk_gguf_writer_new(0);
    uint32_t rows = 0;
    for (size_t i = 0; i < sk_gguf_n_kv(g); i++) {
        sk_str k = sk_gguf_kv_key(g, i);
        if (sk_str_eq(k, "general.alignment")) continue;
        if (sk_str_eq(k, "modern-bert.vocab_size")) continue;
        cr_assert_eq(sk_gguf_writer_add_value(w, k, sk_gguf_kv_value(g, i)), SKYCMD_OK);
    }
    for (size_t i = 0; i < sk_gguf_n_tensors(g); i++) {
        const sk_gguf_tensor *t = sk_gguf_tensor_at(g, i);
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        uint64_t ne[4] = {t->ne[0], t->ne[1], t->ne[2], t->ne[3]};
        uint64_t nbytes = t->nbytes;
        if (strcmp(name, "token_embd.weight") == 0) { /* the last 8 rows cut off */
            ne[1] -= 8;
            rows = (uint32_t)ne[1];
            nbytes = sk_ggml_row_size(t->type, ne[0]) * ne[1];
        }
        cr_assert_eq(sk_gguf_writer_add_tensor(w, name, t->n_dims, ne, t->type, t->data, nbytes,
                                               1, &e), SKYCMD_OK, "%s", e.msg);
    }
    cr_assert_eq(sk_gguf_writer_add_u32(w, "modern-bert.vocab_size", rows), SKYCMD_OK);
    uint8_t *buf = NULL;
    size_t size = 0;
    cr_assert_eq(sk_gguf_writer_write_mem(w, &buf, &size, &e), SKYCMD_OK, "%s", e.msg);
    sk_gguf_writer_free(w);
    sk_gguf_close(g);
    skycmd_model *m = NULL;
    int st = skycmd_model_open_buffer(buf, size, NULL, &m, err);
    cr_expect_eq(st, SKYCMD_E_FORMAT, "%s", skycmd_error_message(err));
    cr_expect_null(m);
    char want[96];
    snprintf(want, sizeof want, "token_embd.weight has %u rows", rows);
    cr_expect(strstr(skycmd_error_message(err), "tokenizer.ggml.tokens") &&
              strstr(skycmd_error_message(err), want), "%s", skycmd_error_message(err));
    free(buf);
    skycmd_error_free(err);
    unlink(path);
}

/* skycmd_model_open on a Laya checkpoint directory converts it in memory and answers every
 * request of the golden set exactly (the JSON prints each double's shortest round-trip
 * digits, so equal text is equal bits) as the GGUF skycmd_convert writes from it, under the
 * same name; bad directories fail naming their file. */
Test(decide, laya_directory_answers_as_its_converted_gguf) {
    char dir[256], gguf[300];
    snprintf(dir, sizeof dir, "%s/test_decide_dir_%d", SKYCMD_BINARY_DIR, (int)getpid());
    snprintf(gguf, sizeof gguf, "%s.gguf", dir);
    skycmd_options *o = skycmd_options_new();
    skycmd_options_set_int(o, SKYCMD_OPT_LAYOUT, SKYCMD_LAYOUT_LAYA);
    skycmd_error *err = skycmd_error_new();
    cr_assert_eq(skycmd_random_model("s1-micro", dir, o, err), SKYCMD_OK, "%s",
                 skycmd_error_message(err));
    cr_assert_eq(skycmd_convert(dir, gguf, NULL, err), SKYCMD_OK, "%s", skycmd_error_message(err));
    skycmd_model *md = NULL, *mf = NULL;
    cr_assert_eq(skycmd_model_open(dir, NULL, &md, err), SKYCMD_OK, "%s", skycmd_error_message(err));
    cr_assert_eq(skycmd_model_open(gguf, NULL, &mf, err), SKYCMD_OK, "%s", skycmd_error_message(err));
    cr_expect_str_eq(skycmd_model_name(md), skycmd_model_name(mf));
    skycmd_session *sd = NULL, *sf = NULL;
    cr_assert_eq(skycmd_session_new(md, &sd), 0);
    cr_assert_eq(skycmd_session_new(mf, &sf), 0);
    cJSON *reqs = tu_load_json(SKYCMD_FIXTURES "/golden/requests.json");
    int n_ok = 0;
    for (cJSON *r = reqs->child; r; r = r->next) {
        const char *body = cJSON_GetObjectItem(r, "body")->valuestring;
        char *jd = NULL, *jf = NULL;
        int rd = skycmd_decide_json(sd, body, strlen(body), &jd);
        int rf = skycmd_decide_json(sf, body, strlen(body), &jf);
        cr_expect_eq(rd, rf, "%s", cJSON_GetObjectItem(r, "name")->valuestring);
        if (rd == SKYCMD_OK && rf == SKYCMD_OK) {
            cr_expect_str_eq(jd, jf, "%s", cJSON_GetObjectItem(r, "name")->valuestring);
            n_ok++;
        }
        skycmd_string_free(jd);
        skycmd_string_free(jf);
    }
    cr_expect_gt(n_ok, 30, "only %d requests answered", n_ok);
    cJSON_Delete(reqs);
    skycmd_session_free(sd);
    skycmd_session_free(sf);
    cr_expect_eq(skycmd_model_free(md), SKYCMD_OK);
    cr_expect_eq(skycmd_model_free(mf), SKYCMD_OK);
    /* a broken directory: the message names the file */
    char cfg[320];
    snprintf(cfg, sizeof cfg, "%s/rl_agent_config.json", dir);
    cr_assert_eq(unlink(cfg), 0);
    cr_expect_neq(skycmd_model_open(dir, NULL, &md, err), SKYCMD_OK);
    cr_expect_null(md);
    cr_expect(strstr(skycmd_error_message(err), "rl_agent_config.json"), "%s",
              skycmd_error_message(err));
    unlink(gguf);
    tu_rm_rf(dir);
    skycmd_options_free(o);
    skycmd_error_free(err);
}

/* ---------------------------------------------------------------- option_order ---- */

static skycmd_response *decide_body(skycmd_session *s, const char *body) {
    skycmd_request *req = NULL;
    cr_assert_eq(skycmd_request_parse(body, strlen(body), &req), 0, "%s: %s", body,
                 skycmd_request_errmsg(req));
    skycmd_response *resp = NULL;
    cr_assert_eq(skycmd_decide(s, req, &resp), 0, "%s", skycmd_session_errmsg(s));
    skycmd_request_free(req);
    return resp;
}

static double prob_of(const skycmd_response *r, size_t i, const char *key) {
    for (size_t j = 0; j < skycmd_response_option_count(r, i); j++)
        if (strcmp(skycmd_response_option_key(r, i, j), key) == 0)
            return skycmd_response_option_probability(r, i, j);
    cr_assert_fail("no option %s", key);
    return NAN;
}

/* laya's option_order: slot s shows option order[s] (build_head), and the slot-ordered
 * probabilities go back to the caller's option order (unpermute_probs). So a question with
 * an order answers, key by key and bit for bit, like the same question with its options
 * written in slot order, while its answer lists the options in the caller's order. */
Test(decide, option_order_permutes_slots_and_unpermutes_probabilities) {
    char path[256];
    snprintf(path, sizeof path, "%s/test_decide_order_%d.gguf", SKYCMD_BINARY_DIR, (int)getpid());
    skycmd_model *m = random_model(path);
    cr_assert(m);
    skycmd_session *s = NULL;
    cr_assert_eq(skycmd_session_new(m, &s), 0);
    skycmd_response *ro = decide_body(s,
        "{\"state\": \"the door is open and the lights are off\", \"questions\": {"
        "\"c\": {\"type\": \"choice\", \"instructions\": \"What next?\", \"criteria\": "
        "{\"a\": \"close the door\", \"b\": \"turn on the lights\", \"c\": \"wait\"}, "
        "\"option_order\": [2, 0, 1]},"
        "\"s\": {\"type\": \"score\", \"instructions\": \"How dark?\", \"criteria\": "
        "[\"bright\", \"dim\", \"dark\", \"pitch black\"], \"option_order\": [3, 1, 0, 2]},"
        "\"n\": {\"type\": \"noul\", \"instructions\": \"Is anyone home?\", "
        "\"option_order\": [1, 0]}}}");
    skycmd_response *rp = decide_body(s,
        "{\"state\": \"the door is open and the lights are off\", \"questions\": {"
        "\"c\": {\"type\": \"choice\", \"instructions\": \"What next?\", \"criteria\": "
        "{\"c\": \"wait\", \"a\": \"close the door\", \"b\": \"turn on the lights\"}}}}");
    /* the choice: same probabilities per key; listed in the caller's order a, b, c */
    static const char *keys[3] = {"a", "b", "c"};
    for (size_t j = 0; j < 3; j++) {
        cr_expect_str_eq(skycmd_response_option_key(ro, 0, j), keys[j]);
        cr_expect_eq(prob_of(ro, 0, keys[j]), prob_of(rp, 0, keys[j]), "key %s", keys[j]);
    }
    cr_expect_str_eq(skycmd_response_answer_choice(ro, 0), skycmd_response_answer_choice(rp, 0));
    cr_expect_eq(skycmd_response_input_tokens(ro) > 0, 1);
    /* the score: levels keep their meaning (the value is sum_i i * p_i in level order) */
    double v = 0.0, sum = 0.0;
    for (size_t j = 0; j < 4; j++) {
        char k[4];
        snprintf(k, sizeof k, "%zu", j);
        cr_expect_str_eq(skycmd_response_option_key(ro, 1, j), k);
        v += (double)j * skycmd_response_option_probability(ro, 1, j);
        sum += skycmd_response_option_probability(ro, 1, j);
    }
    cr_expect(fabs(sum - 1.0) < 1e-12);
    cr_expect(fabs(v - skycmd_response_answer_value(ro, 1)) < 1e-12, "%g vs %g", v,
              skycmd_response_answer_value(ro, 1));
    /* the noul: P(true) is the probability of option 1 ("true"), which sat in slot 0 */
    cr_expect_eq(skycmd_response_answer_value(ro, 2), prob_of(ro, 2, "true"));
    skycmd_response_free(ro);
    skycmd_response_free(rp);
    /* what laya's _check_question refuses is refused, naming the question and the field;
     * null is absent */
    static const char *bad[] = {"[0, 0, 1]", "[0, 1]", "[0, 1, 2, 3]", "[0, 1, 2.0]",
                                "[true, 0, 1]", "[0, 1, 3]", "[-1, 0, 1]", "\"012\"", "{}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char body[512];
        snprintf(body, sizeof body, "{\"state\": \"x\", \"questions\": {\"q\": {\"type\": "
                 "\"choice\", \"instructions\": \"i\", \"criteria\": {\"a\": 1, \"b\": 2, "
                 "\"c\": 3}, \"option_order\": %s}}}", bad[i]);
        skycmd_request *req = NULL;
        cr_expect_eq(skycmd_request_parse(body, strlen(body), &req), SKYCMD_E_REQUEST, "%s",
                     bad[i]);
        cr_expect(strstr(skycmd_request_errmsg(req), "questions.q: \"option_order\" must be a "
                         "permutation of range(3)"), "%s: %s", bad[i], skycmd_request_errmsg(req));
        skycmd_request_free(req);
    }
    skycmd_response *rn = decide_body(s, "{\"state\": \"x\", \"questions\": {\"q\": {\"type\": "
                                         "\"noul\", \"instructions\": \"i\", \"option_order\": null}}}");
    skycmd_response_free(rn);
    skycmd_session_free(s);
    skycmd_model_free(m);
    unlink(path);
}

/* The parallel option layout (checkpoint built by laya: tests/fixtures/golden/ckpt/
 * laya-parallel; the golden suite compares it with laya) gives bitwise the same answers one
 * question at a time, batched, and on two threads; the int8 weights follow it too (close to
 * f32, and far from what the sequential layout answers). */
Test(decide, parallel_layout_is_the_same_batched_threaded_and_int8) {
    const char *dir = SKYCMD_FIXTURES "/golden/ckpt/laya-parallel";
    static const char body[] =
        "{\"state\": \"a jar with a stuck lid\", \"questions\": {"
        "\"t\": {\"type\": \"choice\", \"instructions\": \"Which tool?\", \"criteria\": "
        "{\"hammer\": \"hits nails\", \"screwdriver\": \"turns screws\", \"saw\": \"cuts wood\", "
        "\"glue\": \"sticks parts\"}},"
        "\"s\": {\"type\": \"score\", \"instructions\": \"How stuck?\", \"criteria\": "
        "[\"loose\", \"firm\", \"stuck\"]}, \"n\": {\"type\": \"noul\", \"instructions\": \"Open?\"}}}";
    skycmd_error *err = skycmd_error_new();
    char *ref = NULL;
    static const int64_t threads[2] = {1, 2};
    for (int w = 0; w < 3; w++) {
        skycmd_options *o = skycmd_options_new();
        skycmd_options_set_int(o, SKYCMD_OPT_TYPE, SKYCMD_TYPE_F32);
        if (w == 2) skycmd_options_set_int(o, SKYCMD_OPT_WEIGHTS, SKYCMD_WEIGHTS_Q8);
        skycmd_model *m = NULL;
        cr_assert_eq(skycmd_model_open(dir, o, &m, err), SKYCMD_OK, "%s", skycmd_error_message(err));
        for (int ti = 0; ti < (w == 2 ? 1 : 2); ti++) {
            skycmd_session *s = NULL;
            cr_assert_eq(skycmd_session_new(m, &s), 0);
            if (w < 2) cr_assert_eq(skycmd_session_set_int(s, SKYCMD_OPT_THREADS, threads[ti]), 0);
            char *js = NULL;
            cr_assert_eq(skycmd_decide_json(s, body, strlen(body), &js), 0, "%s",
                         skycmd_session_errmsg(s));
            if (!ref) ref = js;
            else if (w < 2) {
                cr_expect_str_eq(js, ref, "threads %lld", (long long)threads[ti]);
                skycmd_string_free(js);
            } else {
                /* int8: close to f32 on every probability */
                cJSON *a = cJSON_Parse(ref), *b = cJSON_Parse(js);
                cJSON *pa = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(a, "answers"), "t"), "probabilities");
                cJSON *pb = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(b, "answers"), "t"), "probabilities");
                for (cJSON *x = pa->child; x; x = x->next)
                    cr_expect(fabs(x->valuedouble - cJSON_GetObjectItem(pb, x->string)->valuedouble) < 0.05,
                              "int8 %s: %g vs %g", x->string, cJSON_GetObjectItem(pb, x->string)->valuedouble,
                              x->valuedouble);
                cJSON_Delete(a);
                cJSON_Delete(b);
                skycmd_string_free(js);
            }
            skycmd_session_free(s);
        }
        skycmd_model_free(m);
        skycmd_options_free(o);
        if (w == 0) {
            /* the same questions one request each, batched by decide_batch */
            skycmd_options *o2 = skycmd_options_new();
            skycmd_options_set_int(o2, SKYCMD_OPT_TYPE, SKYCMD_TYPE_F32);
            cr_assert_eq(skycmd_model_open(dir, o2, &m, err), SKYCMD_OK);
            skycmd_session *s = NULL;
            cr_assert_eq(skycmd_session_new(m, &s), 0);
            skycmd_request *rq[2] = {NULL, NULL};
            cr_assert_eq(skycmd_request_parse(body, strlen(body), &rq[0]), 0);
            cr_assert_eq(skycmd_request_parse(body, strlen(body), &rq[1]), 0);
            skycmd_response *rs[2] = {NULL, NULL};
            cr_assert_eq(skycmd_decide_batch(s, (const skycmd_request *const *)rq, 2, rs), 0, "%s",
                         skycmd_session_errmsg(s));
            cr_expect_str_eq(skycmd_response_json(rs[0]), ref);
            cr_expect_str_eq(skycmd_response_json(rs[1]), ref);
            for (int i = 0; i < 2; i++) {
                skycmd_response_free(rs[i]);
                skycmd_request_free(rq[i]);
            }
            skycmd_session_free(s);
            skycmd_model_free(m);
            skycmd_options_free(o2);
        }
    }
    skycmd_string_free(ref);
    skycmd_error_free(err);
}
