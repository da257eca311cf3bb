/*
 * test_batch.c - skycmd_decide_batch (several requests' questions in shared batches) and the
 * threaded forward pass, checked through the public API against one-by-one, single-thread
 * skycmd_decide: the responses must be byte-identical (the library promises bitwise equal
 * logits for any batch composition and thread count; the 1e-6 bound of the speed issue is
 * thereby met with margin). Models are random presets written by skycmd_random_model.
 */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "skycmd.h"
#include "kernels/pool.h"

static skycmd_model *open_random(const char *preset, char *path, size_t cap) {
    snprintf(path, cap, "%s/test_batch_%s_%d.gguf", SKYCMD_BINARY_DIR, preset, (int)getpid());
    skycmd_options *o = skycmd_options_new();
    skycmd_error *err = skycmd_error_new();
    skycmd_options_set_int(o, SKYCMD_OPT_SEED, 11);
    cr_assert_eq(skycmd_random_model(preset, path, o, err), SKYCMD_OK, "%s",
                 skycmd_error_message(err));
    skycmd_model *m = NULL;
    cr_assert_eq(skycmd_model_open(path, NULL, &m, err), SKYCMD_OK, "%s", skycmd_error_message(err));
    skycmd_options_free(o);
    skycmd_error_free(err);
    return m;
}

/* A request: the example's three questions on a state of about `words` words (seeded), plus
 * `extra` more choice questions. */
static char *make_request(int words, int extra, unsigned seed) {
    size_t cap = 4096 + (size_t)words * 16 + (size_t)extra * 256;
    char *b = malloc(cap);
    cr_assert(b);
    size_t n = (size_t)snprintf(b, cap, "{\"state\": \"");
    unsigned x = seed * 2654435761u + 1;
    static const char *const vocab[] = {"drone", "gap", "left", "up", "down", "wall", "7", "12",
                                        "fast", "slow", "alt", "vy", "dx", "nxt", "the", "is"};
    for (int i = 0; i < words; i++) {
        x = x * 1103515245u + 12345u;
        n += (size_t)snprintf(b + n, cap - n, "%s%s", i ? " " : "", vocab[(x >> 16) % 16]);
    }
    n += (size_t)snprintf(b + n, cap - n,
        "\", \"questions\": {"
        "\"action\": {\"type\": \"choice\", \"instructions\": \"Which input keeps the drone "
        "flying?\", \"criteria\": {\"thrust\": \"fire the rotors\", \"glide\": \"let it fall\"}},"
        "\"danger\": {\"type\": \"noul\", \"instructions\": \"Will the drone crash soon?\"},"
        "\"margin\": {\"type\": \"score\", \"instructions\": \"How much room is left?\", "
        "\"criteria\": [\"none\", \"tight\", \"comfortable\"]}");
    for (int q = 0; q < extra; q++)
        n += (size_t)snprintf(b + n, cap - n,
                              ", \"q%d\": {\"type\": \"choice\", \"instructions\": \"Pick %d\", "
                              "\"criteria\": {\"a\": \"first %d\", \"b\": \"second\", \"c\": \"third\"}}",
                              q, q, q);
    snprintf(b + n, cap - n, "}}");
    return b;
}

static skycmd_request *parse(const char *json) {
    skycmd_request *r = NULL;
    int st = skycmd_request_parse(json, strlen(json), &r);
    cr_assert_eq(st, SKYCMD_OK, "%s", r ? skycmd_request_errmsg(r) : "?");
    return r;
}

static char *decide_one(skycmd_session *s, const skycmd_request *r) {
    skycmd_response *resp = NULL;
    cr_assert_eq(skycmd_decide(s, r, &resp), SKYCMD_OK, "%s", skycmd_session_errmsg(s));
    char *j = strdup(skycmd_response_json(resp));
    skycmd_response_free(resp);
    return j;
}

#define NREQ 7

static void check_batch_equals_single(const char *preset, int threads) {
    char path[512];
    skycmd_model *m = open_random(preset, path, sizeof path);
    skycmd_session *one = NULL, *bat = NULL;
    cr_assert_eq(skycmd_session_new(m, &one), SKYCMD_OK);
    cr_assert_eq(skycmd_session_new(m, &bat), SKYCMD_OK);
    cr_assert_eq(skycmd_session_set_int(bat, SKYCMD_OPT_THREADS, threads), SKYCMD_OK);
    /* short and long states, and request 3 with 20 questions (it crosses the 16-sequence
     * batch boundary on its own) */
    static const int words[NREQ] = {8, 120, 3, 40, 300, 15, 60};
    static const int extra[NREQ] = {0, 1, 17, 0, 2, 0, 5};
    char *json[NREQ], *single[NREQ];
    skycmd_request *req[NREQ];
    for (int i = 0; i < NREQ; i++) {
        json[i] = make_request(words[i], extra[i], (unsigned)i + 1);
        req[i] = parse(json[i]);
        single[i] = decide_one(one, req[i]);
    }
    /* every split of the list into consecutive batches of 1..NREQ requests */
    for (size_t step = 1; step <= NREQ; step++) {
        for (size_t i0 = 0; i0 < NREQ; i0 += step) {
            size_t n = NREQ - i0 < step ? NREQ - i0 : step;
            skycmd_response *out[NREQ];
            int st = skycmd_decide_batch(bat, (const skycmd_request *const *)&req[i0], n, out);
            cr_assert_eq(st, SKYCMD_OK, "%s", skycmd_session_errmsg(bat));
            for (size_t k = 0; k < n; k++) {
                cr_assert_str_eq(skycmd_response_json(out[k]), single[i0 + k],
                                 "%s, %d threads: request %zu in a batch of %zu differs", preset,
                                 threads, i0 + k, n);
                cr_assert_eq(skycmd_response_answer_count(out[k]),
                             skycmd_request_question_count(req[i0 + k]));
                skycmd_response_free(out[k]);
            }
        }
    }
    for (int i = 0; i < NREQ; i++) {
        free(json[i]);
        free(single[i]);
        skycmd_request_free(req[i]);
    }
    skycmd_session_free(one);
    skycmd_session_free(bat);
    cr_assert_eq(skycmd_model_free(m), SKYCMD_OK);
    unlink(path);
}

Test(batch, decide_batch_equals_one_by_one_pico) { check_batch_equals_single("s1-pico", 1); }

/* s1-pico has one head: with 2 threads the attention is split by runs of query blocks
 * within a sequence (sliding window 64). */
Test(batch, decide_batch_threads_equal_one_by_one_pico) {
    sk_compute_set_budget(8);
    check_batch_equals_single("s1-pico", 2);
    sk_compute_set_budget(0);
}

/* s1-micro: 4 heads, 6 layers with sliding windows, so the threaded attention splits units
 * by head and by query blocks; the budget is raised so that 3 threads really run even on a
 * 2-core machine. */
Test(batch, decide_batch_threads_equal_one_by_one_micro) {
    sk_compute_set_budget(8);
    check_batch_equals_single("s1-micro", 3);
    sk_compute_set_budget(0);
    cr_assert_eq(sk_compute_in_use(), 0, "every budget unit is returned");
}

Test(batch, errors_and_edges) {
    char path[512];
    skycmd_model *m = open_random("s1-pico", path, sizeof path);
    skycmd_session *s = NULL;
    cr_assert_eq(skycmd_session_new(m, &s), SKYCMD_OK);
    char *j0 = make_request(5, 0, 1);
    skycmd_request *good = parse(j0), *bad = NULL;
    cr_assert_neq(skycmd_request_parse("{\"questions\": 3}", 16, &bad), SKYCMD_OK);
    cr_assert(bad);
    const skycmd_request *list[3] = {good, bad, good};
    skycmd_response *out[3] = {(skycmd_response *)1, (skycmd_response *)1, (skycmd_response *)1};
    /* a request that did not parse: misuse, named by index, nothing returned */
    cr_assert_eq(skycmd_decide_batch(s, list, 3, out), SKYCMD_E_MISUSE);
    cr_assert(strncmp(skycmd_session_errmsg(s), "request 1: ", 11) == 0, "%s", skycmd_session_errmsg(s));
    for (int i = 0; i < 3; i++) cr_assert_null(out[i]);
    /* n == 0 is a no-op; NULL arrays with n > 0 are refused; a NULL session is misuse */
    cr_assert_eq(skycmd_decide_batch(s, NULL, 0, NULL), SKYCMD_OK);
    cr_assert_eq(skycmd_decide_batch(s, NULL, 1, out), SKYCMD_E_INVALID_ARGUMENT);
    cr_assert_eq(skycmd_decide_batch(NULL, list, 1, out), SKYCMD_E_MISUSE);
    /* a count no array can hold is refused before out is touched */
    cr_assert_eq(skycmd_decide_batch(s, list, SIZE_MAX, out), SKYCMD_E_INVALID_ARGUMENT);
    int st[1];
    cr_assert_eq(skycmd_decide_each(s, list, SIZE_MAX / 2, out, st, NULL), SKYCMD_E_INVALID_ARGUMENT);
    /* the same request twice in one batch: two identical responses */
    list[1] = good;
    cr_assert_eq(skycmd_decide_batch(s, list, 2, out), SKYCMD_OK, "%s", skycmd_session_errmsg(s));
    cr_assert_str_eq(skycmd_response_json(out[0]), skycmd_response_json(out[1]));
    cr_assert_eq(skycmd_response_input_tokens(out[0]), skycmd_response_input_tokens(out[1]));
    cr_assert_gt(skycmd_response_input_tokens(out[0]), 0);
    skycmd_response_free(out[0]);
    skycmd_response_free(out[1]);
    skycmd_request_free(good);
    skycmd_request_free(bad);
    free(j0);
    skycmd_session_free(s);
    cr_assert_eq(skycmd_model_free(m), SKYCMD_OK);
    unlink(path);
}

/* skycmd_decide_each: every slot answered or refused on its own, each exactly as a lone
 * skycmd_decide answers or refuses it (the reference), whatever else shares the call. */
static void check_each_slot(skycmd_session *s, const skycmd_request *r, int parse_st,
                            const skycmd_response *got, int status, const char *msg, size_t i) {
    if (!r) {
        cr_assert_eq(status, SKYCMD_E_INVALID_ARGUMENT, "slot %zu", i);
        cr_assert_null(got);
        cr_assert(msg && strstr(msg, "NULL"), "slot %zu: %s", i, msg ? msg : "(null)");
        return;
    }
    if (parse_st) { /* did not parse: its parse status and message */
        cr_assert_eq(status, parse_st, "slot %zu: the parse status", i);
        cr_assert_str_eq(msg, skycmd_request_errmsg(r), "slot %zu", i);
        cr_assert_null(got);
        return;
    }
    skycmd_response *want = NULL;
    int want_st = skycmd_decide(s, r, &want);
    cr_assert_eq(status, want_st, "slot %zu: %s", i, msg ? msg : "(ok)");
    if (want_st) {
        cr_assert_null(got, "slot %zu", i);
        cr_assert_str_eq(msg, skycmd_session_errmsg(s), "slot %zu", i);
    } else {
        cr_assert_null(msg, "slot %zu", i);
        cr_assert_str_eq(skycmd_response_json(got), skycmd_response_json(want), "slot %zu", i);
    }
    skycmd_response_free(want);
}

Test(batch, decide_each_answers_each_on_its_own) {
    char path[512];
    skycmd_model *m = open_random("s1-pico", path, sizeof path);
    skycmd_session *s = NULL;
    cr_assert_eq(skycmd_session_new(m, &s), SKYCMD_OK);
    /* no automatic tournament: a choice whose markers do not fit fails in the forward pass */
    cr_assert_eq(skycmd_session_set_int(s, SKYCMD_OPT_AUTO_TOURNAMENT_GROUP, 0), SKYCMD_OK);
    enum { N = 9 };
    char *good[3] = {make_request(5, 0, 1), make_request(40, 2, 2), make_request(90, 0, 3)};
    const char *texts[N] = {
        good[0],
        "{\"state\": \"x\", \"questions\": {\"q\": ",                 /* malformed JSON */
        good[1],
        "{\"state\": \"x\", \"questions\": {\"q\": {\"type\": \"choice\"}}}", /* invalid */
        /* fails in the pass: 12 options cannot all fit max_len 24 */
        "{\"state\": \"a b c\", \"max_len\": 24, \"questions\": {\"q\": {\"type\": \"choice\", "
        "\"instructions\": \"pick one of these\", \"criteria\": {\"a\": \"alpha\", \"b\": \"beta\", "
        "\"c\": \"gamma\", \"d\": \"delta\", \"e\": \"epsilon\", \"f\": \"zeta\", \"g\": \"eta\", "
        "\"h\": \"theta\", \"i\": \"iota\", \"j\": \"kappa\", \"k\": \"lambda\", \"l\": \"mu\"}}}}",
        good[2],
        /* refused by its plan: max_len over the session's budget cap */
        "{\"state\": \"x\", \"max_len\": 100000, \"questions\": {\"q\": {\"type\": \"noul\", "
        "\"instructions\": \"ok?\"}}}",
        /* more passes: a tournament */
        "{\"state\": \"a b\", \"tournament_group\": 2, \"questions\": {\"q\": {\"type\": \"choice\", "
        "\"instructions\": \"pick\", \"criteria\": {\"a\": \"one\", \"b\": \"two\", \"c\": \"three\"}}}}",
        NULL};                                                       /* slot 8: a NULL request */
    skycmd_request *reqs[N] = {0};
    int parse_st[N] = {0};
    for (int i = 0; i < N - 1; i++) parse_st[i] = skycmd_request_parse(texts[i], strlen(texts[i]), &reqs[i]);
    cr_assert_eq(parse_st[1], SKYCMD_E_JSON);
    cr_assert_eq(parse_st[3], SKYCMD_E_REQUEST);
    skycmd_response *out[N];
    int status[N];
    char *msg[N];
    cr_assert_eq(skycmd_decide_each(s, (const skycmd_request *const *)reqs, N, out, status, msg),
                 SKYCMD_OK, "%s", skycmd_session_errmsg(s));
    int ok = 0, failed = 0;
    for (size_t i = 0; i < N; i++) {
        check_each_slot(s, reqs[i], parse_st[i], out[i], status[i], msg[i], i);
        status[i] ? failed++ : ok++;
    }
    cr_assert_eq(ok, 4, "slots 0, 2, 5 and 7 are answered");
    cr_assert_eq(failed, 5);
    cr_assert(strstr(msg[4], "option markers fit"), "%s", msg[4]);
    /* without messages; the answers are the same */
    skycmd_response *out2[N];
    int status2[N];
    cr_assert_eq(skycmd_decide_each(s, (const skycmd_request *const *)reqs, N, out2, status2, NULL), SKYCMD_OK);
    for (size_t i = 0; i < N; i++) {
        cr_assert_eq(status2[i], status[i]);
        if (out[i]) cr_assert_str_eq(skycmd_response_json(out2[i]), skycmd_response_json(out[i]));
        skycmd_response_free(out[i]);
        skycmd_response_free(out2[i]);
        skycmd_string_free(msg[i]);
    }
    /* only answerable plain requests: one shared pass, the same answers */
    const skycmd_request *plain[3] = {reqs[0], reqs[2], reqs[5]};
    cr_assert_eq(skycmd_decide_each(s, plain, 3, out2, status2, msg), SKYCMD_OK);
    for (size_t i = 0; i < 3; i++) {
        check_each_slot(s, plain[i], 0, out2[i], status2[i], msg[i], i);
        skycmd_response_free(out2[i]);
    }
    /* edges: n == 0, NULL arrays, NULL session */
    cr_assert_eq(skycmd_decide_each(s, NULL, 0, NULL, NULL, NULL), SKYCMD_OK);
    cr_assert_eq(skycmd_decide_each(s, (const skycmd_request *const *)reqs, 1, out, NULL, NULL),
                 SKYCMD_E_INVALID_ARGUMENT);
    cr_assert_null(out[0]);
    cr_assert_eq(skycmd_decide_each(NULL, (const skycmd_request *const *)reqs, 1, out, status, NULL),
                 SKYCMD_E_MISUSE);
    for (int i = 0; i < N; i++) skycmd_request_free(reqs[i]);
    for (int i = 0; i < 3; i++) free(good[i]);
    skycmd_session_free(s);
    cr_assert_eq(skycmd_model_free(m), SKYCMD_OK);
    unlink(path);
}

/* The budget: a pool borrows helpers only from units nobody holds. */
static void note_nth(void *ctx, int ith, int nth) {
    if (ith == 0) *(int *)ctx = nth;
}

Test(batch, thread_budget_limits_helpers) {
    sk_compute_set_budget(2);
    sk_pool *p = sk_pool_new(4);
    cr_assert(p);
    int nth = 0;
    sk_pool_run(p, note_nth, &nth);
    cr_assert_eq(nth, 3, "budget 2, nobody holding a unit: the caller + 2 helpers (got %d)", nth);
    sk_compute_begin();  /* this thread computes: one unit left */
    sk_pool_run(p, note_nth, &nth);
    cr_assert_eq(nth, 2, "got %d", nth);
    sk_compute_begin();  /* a second forward pass elsewhere: no unit left */
    sk_pool_run(p, note_nth, &nth);
    cr_assert_eq(nth, 1, "an exhausted budget runs on the caller alone (got %d)", nth);
    sk_compute_end();
    sk_compute_end();
    cr_assert_eq(sk_compute_in_use(), 0);
    sk_pool_run_all(p, note_nth, &nth);
    cr_assert_eq(nth, 4);
    sk_pool_free(p);
    sk_compute_set_budget(0);
    cr_assert_geq(sk_compute_budget(), 1);
}
