/*
 * test_budget.c - the session options SKYCMD_OPT_MAX_LEN / SKYCMD_OPT_HEAD_MAX_LEN (laya's
 * per-call max_len / head_max_len) through the public API: range and misuse checks; a
 * max_len equal to the model's own changes nothing (byte-identical responses); a smaller one
 * cuts the state (fewer input tokens, exactly max_len per question when the state is long);
 * setting 0 restores the model's value; skycmd_decide_batch follows the options like
 * skycmd_decide. Numerical agreement with laya itself is tests/serve/test_batch.py's job.
 */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "skycmd.h"

static skycmd_model *open_pico(char *path, size_t cap) {
    snprintf(path, cap, "%s/test_budget_%d.gguf", SKYCMD_BINARY_DIR, (int)getpid());
    skycmd_error *err = skycmd_error_new();
    cr_assert_eq(skycmd_random_model("s1-pico", path, NULL, err), SKYCMD_OK, "%s", skycmd_error_message(err));
    skycmd_model *m = NULL;
    cr_assert_eq(skycmd_model_open(path, NULL, &m, err), SKYCMD_OK, "%s", skycmd_error_message(err));
    skycmd_error_free(err);
    return m;
}

static char *long_request(void) {
    size_t cap = 64 * 1024;
    char *b = malloc(cap);
    cr_assert(b);
    size_t n = (size_t)snprintf(b, cap, "{\"state\": \"");
    for (int i = 0; i < 2000; i++) n += (size_t)snprintf(b + n, cap - n, "w%d ", i);
    snprintf(b + n, cap - n,
             "\", \"questions\": {\"a\": {\"type\": \"choice\", \"instructions\": \"Pick one\", "
             "\"criteria\": {\"x\": \"the first\", \"y\": \"the second\"}}, "
             "\"d\": {\"type\": \"noul\", \"instructions\": \"Is it so?\"}}}");
    return b;
}

static char *decide(skycmd_session *s, const char *body, int64_t *tokens) {
    skycmd_request *q = NULL;
    cr_assert_eq(skycmd_request_parse(body, strlen(body), &q), SKYCMD_OK);
    skycmd_response *r = NULL;
    cr_assert_eq(skycmd_decide(s, q, &r), SKYCMD_OK, "%s", skycmd_session_errmsg(s));
    char *json = strdup(skycmd_response_json(r));
    if (tokens) *tokens = skycmd_response_input_tokens(r);
    skycmd_response_free(r);
    skycmd_request_free(q);
    return json;
}

Test(budget, options_are_checked) {
    char path[512];
    skycmd_model *m = open_pico(path, sizeof path);
    skycmd_session *s = NULL;
    cr_assert_eq(skycmd_session_new(m, &s), SKYCMD_OK);
    int64_t lo, hi;
    cr_assert_eq(skycmd_option_bounds(SKYCMD_OPT_MAX_LEN, &lo, &hi), SKYCMD_OK);
    cr_assert_eq(lo, 0);
    cr_assert_eq(hi, 1 << 20);
    cr_assert_eq(skycmd_session_set_int(s, SKYCMD_OPT_MAX_LEN, -1), SKYCMD_E_INVALID_ARGUMENT);
    cr_assert_eq(skycmd_session_set_int(s, SKYCMD_OPT_HEAD_MAX_LEN, (1 << 20) + 1), SKYCMD_E_INVALID_ARGUMENT);
    cr_assert(strstr(skycmd_session_errmsg(s), "outside"));
    cr_assert_eq(skycmd_session_set_int(s, SKYCMD_OPT_MAX_LEN, 128), SKYCMD_OK);
    cr_assert_eq(skycmd_session_set_int(NULL, SKYCMD_OPT_MAX_LEN, 128), SKYCMD_E_MISUSE);
    cr_assert_eq(skycmd_session_set_int(s, SKYCMD_OPT_SEED, 1), SKYCMD_E_INVALID_ARGUMENT);
    skycmd_session_free(s);
    cr_assert_eq(skycmd_model_free(m), SKYCMD_OK);
    unlink(path);
}

Test(budget, max_len_cuts_and_zero_restores) {
    char path[512];
    skycmd_model *m = open_pico(path, sizeof path);
    skycmd_session *s = NULL;
    cr_assert_eq(skycmd_session_new(m, &s), SKYCMD_OK);
    int64_t model_max = 0;
    cr_assert_eq(skycmd_model_get_int(m, "decision.max_tokens", &model_max), SKYCMD_OK);
    char *body = long_request();
    int64_t t0 = 0, t1 = 0, t2 = 0, t3 = 0;
    char *plain = decide(s, body, &t0);
    cr_assert_eq(t0, 2 * model_max, "a long state fills the model's budget per question");
    cr_assert_eq(skycmd_session_set_int(s, SKYCMD_OPT_MAX_LEN, model_max), SKYCMD_OK);
    char *same = decide(s, body, &t1);
    cr_assert_str_eq(same, plain, "max_len = the model's own changes nothing");
    cr_assert_eq(skycmd_session_set_int(s, SKYCMD_OPT_MAX_LEN, 100), SKYCMD_OK);
    char *cut = decide(s, body, &t2);
    cr_assert_eq(t2, 200, "max_len 100: 100 tokens per question");
    cr_assert(strcmp(cut, plain) != 0);
    /* the batch call follows the session's options too */
    skycmd_request *q[2] = {NULL, NULL};
    for (int i = 0; i < 2; i++) cr_assert_eq(skycmd_request_parse(body, strlen(body), &q[i]), SKYCMD_OK);
    skycmd_response *out[2];
    cr_assert_eq(skycmd_decide_batch(s, (const skycmd_request *const *)q, 2, out), SKYCMD_OK);
    for (int i = 0; i < 2; i++) {
        cr_assert_str_eq(skycmd_response_json(out[i]), cut);
        skycmd_response_free(out[i]);
        skycmd_request_free(q[i]);
    }
    cr_assert_eq(skycmd_session_set_int(s, SKYCMD_OPT_HEAD_MAX_LEN, 24), SKYCMD_OK);
    char *head = decide(s, body, NULL);
    cr_assert(strcmp(head, cut) != 0, "head_max_len changes the prompt");
    cr_assert_eq(skycmd_session_set_int(s, SKYCMD_OPT_MAX_LEN, 0), SKYCMD_OK);
    cr_assert_eq(skycmd_session_set_int(s, SKYCMD_OPT_HEAD_MAX_LEN, 0), SKYCMD_OK);
    char *back = decide(s, body, &t3);
    cr_assert_str_eq(back, plain, "0 restores the model's budgets");
    free(plain);
    free(same);
    free(cut);
    free(head);
    free(back);
    free(body);
    skycmd_session_free(s);
    cr_assert_eq(skycmd_model_free(m), SKYCMD_OK);
    unlink(path);
}
