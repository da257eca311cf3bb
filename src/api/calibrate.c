/*
 * calibrate.c - the public skycmd_calibrate(): laya.calibrate's temperature refit of a GGUF
 * decision model on a labelled JSONL file (docs/calibrate.md), written as a copy of the file
 * in which only the <arch>.decision.temperature.* keys differ, plus a JSON report.
 *
 *  - Records are laya's records_from_labeled: per labelled line, each question's raw marker
 *    logits (this library's forward pass, before any temperature) with its target vector cut
 *    to the marker count. A line is a /v1/systemone request plus "targets" (laya's vectors,
 *    option order) or "expected" (choice key, score level, noul bool: one-hot).
 *  - The fit, the floors, the clamps and the ECE are src/decide/temperature_fit.h.
 *  - The file is read once, streamed a batch of lines at a time; memory holds the records
 *    (k floats each), not the file. Progress counts bytes of the labelled file.
 */
#define _POSIX_C_SOURCE 200809L /* getline */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../decide/temperature_fit.h"
#include "api.h"
#include "handles.h"

#define CAL_BATCH 32

typedef struct cal_pending {
    int qt;
    size_t k;
    double t[SK_REQUEST_MAX_OPTIONS];
    size_t n_t;
    size_t line;
} cal_pending;

typedef struct cal_ctx {
    sk_calib_set set;
    cal_pending *pend;     /* per question of the batch, overall order */
    size_t n_pend, cap_pend;
    int failed;
    sk_err *e;
} cal_ctx;

static void sink(void *ud, size_t g, int qtype, const float *z, size_t k) {
    cal_ctx *c = ud;
    if (c->failed || g >= c->n_pend) return;
    const cal_pending *p = &c->pend[g];
    /* laya: _vec(targets[qid])[:k], then _validated_pair wants len(target) == len(logits) */
    if (p->n_t < k) {
        c->failed = sk_fail(c->e, SKYCMD_E_REQUEST, "line %zu: logits and target must have the same length",
                            p->line);
        return;
    }
    int rc = sk_calib_add(&c->set, qtype, z, p->t, k, c->e);
    if (rc) {
        sk_err_prefix(c->e, "line %zu", p->line);
        c->failed = rc;
    }
}

/* The target vector of question q from the line's "targets" or "expected". */
static int line_target(const sk_rquestion *q, const sk_jv *targets, const sk_jv *expected,
                       cal_pending *p, sk_err *e) {
    int idn = sk_question_id_len(q->id);
    char id[128];
    snprintf(id, sizeof id, "%.*s", idn, q->id.s);
    const sk_jv *tv = targets && targets->type == SK_JOBJ ? sk_jobj_get(targets, id) : NULL;
    p->n_t = 0;
    if (tv) {
        if (tv->type != SK_JARR || tv->n == 0 || tv->n > SK_REQUEST_MAX_OPTIONS)
            return sk_fail(e, SKYCMD_E_REQUEST, "targets.%s: target must be a one-dimensional numeric vector", id);
        for (size_t j = 0; j < tv->n; j++) {
            if (tv->items[j].type != SK_JNUM)
                return sk_fail(e, SKYCMD_E_REQUEST, "targets.%s: target must be a one-dimensional numeric vector", id);
            p->t[j] = tv->items[j].num;
        }
        p->n_t = tv->n;
        return 0;
    }
    const sk_jv *ev = expected && expected->type == SK_JOBJ ? sk_jobj_get(expected, id) : NULL;
    if (!ev) return sk_fail(e, SKYCMD_E_REQUEST, "question %s has neither \"targets\" nor \"expected\"", id);
    size_t n = q->n_opts, hot = n;
    if (q->type == SKYCMD_QTYPE_CHOICE && ev->type == SK_JSTR) {
        for (size_t j = 0; j < n; j++)
            if (q->opts[j].key.n == ev->n && memcmp(q->opts[j].key.s, ev->s, ev->n) == 0) hot = j;
    } else if (q->type == SKYCMD_QTYPE_SCORE && ev->type == SK_JNUM && ev->num >= 0 &&
               ev->num == floor(ev->num) && ev->num < (double)n) {
        hot = (size_t)ev->num;
    } else if (q->type == SKYCMD_QTYPE_NOUL && (ev->type == SK_JTRUE || ev->type == SK_JFALSE)) {
        hot = ev->type == SK_JTRUE ? 1 : 0;
    }
    if (hot >= n)
        return sk_fail(e, SKYCMD_E_REQUEST,
                       "expected.%s: not an answer of this %s question (choice: one of its keys; "
                       "score: a level 0..%zu; noul: true or false)", id, sk_qtype_names[q->type], n - 1);
    for (size_t j = 0; j < n; j++) p->t[j] = j == hot ? 1.0 : 0.0;
    p->n_t = n;
    return 0;
}

static int run_batch(skycmd_session *s, skycmd_request **reqs, size_t n, cal_ctx *c) {
    if (!n) return 0;
    skycmd_response *out[CAL_BATCH] = {0};
    int rc = skycmd_decide_batch(s, (const skycmd_request *const *)reqs, n, out);
    for (size_t i = 0; i < n; i++) skycmd_response_free(out[i]);
    if (rc) return sk_fail(c->e, rc, "%s", skycmd_session_errmsg(s));
    return c->failed;
}

static void put_bucket_map(sk_buf *b, const sk_calib_fit *f, const int *has, const double *v) {
    sk_buf_putc(b, '{');
    int first = 1;
    for (int i = 0; i < f->n_buckets_seen; i++) {
        int k = f->bucket_order[i];
        if (!has[k]) continue;
        if (!first) sk_buf_putc(b, ',');
        first = 0;
        sk_buf_printf(b, "\"%s\":", sk_calib_bucket_names[k]);
        sk_json_put_double(b, v[k]);
    }
    sk_buf_putc(b, '}');
}

static void put_temps(sk_buf *b, const sk_calib_temps *t) {
    sk_buf_puts(b, "{\"temperature\":[");
    for (int i = 0; i < 3; i++) {
        if (i) sk_buf_putc(b, ',');
        sk_json_put_double(b, t->temperature[i]);
    }
    sk_buf_puts(b, "],\"temperature_by_options\":{");
    int first = 1;
    for (int k = 0; k < SK_CALIB_BUCKETS; k++) {
        if (!t->has_bucket[k]) continue;
        if (!first) sk_buf_putc(b, ',');
        first = 0;
        sk_buf_printf(b, "\"%s\":", sk_calib_bucket_names[k]);
        sk_json_put_double(b, t->bucket_t[k]);
    }
    sk_buf_puts(b, "}}");
}

static void write_report(sk_buf *b, const char *model_path, const char *labelled, const char *out_path,
                         size_t lines, const sk_calib_set *set, const sk_calib_fit *f,
                         const sk_calib_temps *before, const sk_calib_temps *after, int abst,
                         const int *ahas, const double *athr) {
    sk_buf_puts(b, "{\"model\":");
    sk_pyjson_str(b, model_path, strlen(model_path));
    sk_buf_puts(b, ",\"labelled\":");
    sk_pyjson_str(b, labelled, strlen(labelled));
    sk_buf_puts(b, ",\"output\":");
    if (out_path) sk_pyjson_str(b, out_path, strlen(out_path));
    else sk_buf_puts(b, "null");
    sk_buf_printf(b, ",\"lines\":%zu,\"records\":%zu,\"temperature\":[", lines, set->n);
    for (int i = 0; i < 3; i++) {
        if (i) sk_buf_putc(b, ',');
        sk_json_put_double(b, f->temperature[i]);
    }
    sk_buf_puts(b, "],\"temperature_by_options\":");
    put_bucket_map(b, f, f->has_bucket, f->bucket_t);
    sk_buf_puts(b, ",\"n_by_bucket\":{");
    for (int i = 0; i < f->n_buckets_seen; i++) {
        int k = f->bucket_order[i];
        sk_buf_printf(b, "%s\"%s\":%zu", i ? "," : "", sk_calib_bucket_names[k], f->bucket_n[k]);
    }
    sk_buf_puts(b, "},\"temperature_clamped\":{");
    int first = 1;
    for (int i = 0; i < 3 + SK_CALIB_BUCKETS; i++) {
        double raw = i < 3 ? f->type_raw[i] : f->bucket_raw[i - 3];
        double applied = i < 3 ? f->temperature[i] : f->bucket_t[i - 3];
        if (!isfinite(raw) || (raw >= 0.5 && raw <= 5.0)) continue;
        if (i >= 3 && !f->has_bucket[i - 3]) continue;
        sk_buf_printf(b, "%s\"%s\":{\"fitted\":", first ? "" : ",",
                      i < 3 ? sk_qtype_names[i] : sk_calib_bucket_names[i - 3]);
        first = 0;
        sk_json_put_double(b, raw);
        sk_buf_puts(b, ",\"applied\":");
        sk_json_put_double(b, applied);
        sk_buf_printf(b, ",\"bound\":\"%s\"}", raw < 0.5 ? "min" : "max");
    }
    sk_buf_puts(b, "},\"previous\":");
    put_temps(b, before);
    sk_buf_puts(b, ",\"ece\":{");
    sk_calib_temps ident;
    sk_calib_temps_identity(&ident);
    first = 1;
    for (int qt = -1; qt < 3; qt++) {
        size_t n = 0;
        double e0 = sk_calib_ece(set, qt, &ident, &n);
        if (!n) continue;
        double e1 = sk_calib_ece(set, qt, before, NULL), e2 = sk_calib_ece(set, qt, after, NULL);
        sk_buf_printf(b, "%s\"%s\":{\"n\":%zu,\"uncalibrated\":", first ? "" : ",",
                      qt < 0 ? "all" : sk_qtype_names[qt], n);
        first = 0;
        sk_json_put_double(b, e0);
        sk_buf_puts(b, ",\"before\":");
        sk_json_put_double(b, e1);
        sk_buf_puts(b, ",\"after\":");
        sk_json_put_double(b, e2);
        sk_buf_putc(b, '}');
    }
    sk_buf_putc(b, '}');
    if (abst) {
        sk_buf_puts(b, ",\"abstention_thresholds\":");
        put_bucket_map(b, f, ahas, athr);
    }
    sk_buf_putc(b, '}');
}

static void text_temp(sk_buf *b, const char *name, int had, double was, int has, double now) {
    sk_buf_printf(b, "  %-12s ", name);
    if (had) sk_buf_printf(b, "%.6f", was);
    else sk_buf_puts(b, "(type)  ");
    sk_buf_puts(b, " -> ");
    if (has) sk_buf_printf(b, "%.6f\n", now);
    else sk_buf_puts(b, "(type: left out)\n");
}

/* The report as text: what `skycmd calibrate` prints without --json. */
static void write_text(sk_buf *b, size_t lines, const sk_calib_set *set, const sk_calib_fit *f,
                       const sk_calib_temps *before, const sk_calib_temps *after, int abst,
                       const int *ahas, const double *athr) {
    sk_buf_printf(b, "records: %zu from %zu lines\ntemperatures (before -> after):\n", set->n, lines);
    for (int qt = 0; qt < 3; qt++)
        text_temp(b, sk_qtype_names[qt], 1, before->temperature[qt], 1, after->temperature[qt]);
    for (int k = 0; k < SK_CALIB_BUCKETS; k++)
        if (before->has_bucket[k] || after->has_bucket[k])
            text_temp(b, sk_calib_bucket_names[k], before->has_bucket[k], before->bucket_t[k],
                      after->has_bucket[k], after->bucket_t[k]);
    for (int i = 0; i < 3 + SK_CALIB_BUCKETS; i++) {
        double raw = i < 3 ? f->type_raw[i] : f->bucket_raw[i - 3];
        if (!isfinite(raw) || (raw >= 0.5 && raw <= 5.0) || (i >= 3 && !f->has_bucket[i - 3])) continue;
        sk_buf_printf(b, "  clamped %s: the fit wanted %.6g\n",
                      i < 3 ? sk_qtype_names[i] : sk_calib_bucket_names[i - 3], raw);
    }
    sk_buf_puts(b, "ECE (15 bins)      n  uncalibrated    before     after\n");
    sk_calib_temps ident;
    sk_calib_temps_identity(&ident);
    for (int qt = -1; qt < 3; qt++) {
        size_t n = 0;
        double e0 = sk_calib_ece(set, qt, &ident, &n);
        if (!n) continue;
        sk_buf_printf(b, "  %-10s %7zu  %12.6f  %8.6f  %8.6f\n", qt < 0 ? "all" : sk_qtype_names[qt], n, e0,
                      sk_calib_ece(set, qt, before, NULL), sk_calib_ece(set, qt, after, NULL));
    }
    if (abst) {
        sk_buf_puts(b, "abstention thresholds (--min-confidence): ");
        put_bucket_map(b, f, ahas, athr);
        sk_buf_putc(b, '\n');
    }
}

/* The call's progress counts the labelled file's bytes: the model's open inside it reports
 * none of its own, but asks the caller's callback at 0 bytes (of the file's size) at each of
 * its reports, so that a stop cancels the open too. */
typedef struct open_progress {
    const skycmd_options *opts;
    uint64_t total;
} open_progress;

static int on_open_progress(void *ud, uint64_t done, uint64_t total) {
    (void)done;
    (void)total;
    const open_progress *p = ud;
    return p->opts->progress(p->opts->progress_ud, 0, p->total);
}

/* The options of a calibration, checked. */
typedef struct cal_settings {
    int abst, conservative;
    int64_t abst_min_n;
    double target_error;
} cal_settings;

static int read_settings(const skycmd_options *opts, cal_settings *cs, sk_err *e) {
    cs->abst = (int)sk_opt_int(opts, SKYCMD_OPT_CALIB_ABSTENTION, 0);
    cs->abst_min_n = sk_opt_int(opts, SKYCMD_OPT_CALIB_ABSTAIN_MIN_N, 100);
    cs->conservative = (int)sk_opt_int(opts, SKYCMD_OPT_CALIB_CONSERVATIVE, 1);
    cs->target_error = 0.10;
    const char *te = sk_opt_str(opts, SKYCMD_OPT_CALIB_TARGET_ERROR, NULL);
    if (te) {
        char *end = NULL;
        cs->target_error = sk_strtod_c(te, &end);
        if (!te[0] || *end || !(cs->target_error >= 0.0 && cs->target_error <= 1.0))
            return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "calibrate: target_error must be in [0.0, 1.0], got \"%.40s\"",
                           te);
    }
    return 0;
}

int skycmd_calibrate(const char *model_path, const char *labelled_path, const char *out_path,
                     const skycmd_options *opts, char **report_json, skycmd_error *err) {
    if (report_json) *report_json = NULL;
    if (!sk_opts_ok(opts)) return sk_api_fail(err, SKYCMD_E_MISUSE, "invalid options handle");
    if (!model_path || !labelled_path || !model_path[0] || !labelled_path[0] || (out_path && !out_path[0]))
        return sk_api_fail(err, SKYCMD_E_INVALID_ARGUMENT,
                           "calibrate: a model and a labelled file are required (and a non-empty output path)");
    sk_err e = {0};
    cal_settings cs;
    int rc = read_settings(opts, &cs, &e);
    if (rc) return sk_api_report(err, &e, rc);
    skycmd_model *model = NULL;
    struct stat st;
    uint64_t total = stat(labelled_path, &st) == 0 && st.st_size > 0 ? (uint64_t)st.st_size : 0;
    if (opts && opts->progress) {
        open_progress op = {opts, total};
        skycmd_options o = *opts;  /* the same options (borrowed strings), another callback */
        o.progress = on_open_progress;
        o.progress_ud = &op;
        rc = skycmd_model_open(model_path, &o, &model, err);
    } else {
        rc = skycmd_model_open(model_path, opts, &model, err);
    }
    if (rc) return rc;
    FILE *fp = fopen(labelled_path, "rb");
    if (!fp) rc = sk_fail_errno(&e, SKYCMD_E_IO, errno, "%s: cannot open: %s", labelled_path, strerror(errno));
    else rc = sk_calibrate_stream(model, model_path, fp, labelled_path, total, out_path, opts, report_json, &e);
    if (fp) fclose(fp);
    skycmd_model_free(model);
    return sk_api_report(err, &e, rc);
}

int sk_calibrate_stream(skycmd_model *model, const char *model_path, FILE *fp, const char *labelled_path,
                        uint64_t total, const char *out_path, const skycmd_options *opts, char **report_json,
                        sk_err *ep) {
    if (report_json) *report_json = NULL;
    sk_err e = {0};
    cal_settings cs;
    int rc = read_settings(opts, &cs, &e);
    if (rc) return *ep = e, rc;
    const int abst = cs.abst, conservative = cs.conservative;
    const int64_t abst_min_n = cs.abst_min_n;
    const double target_error = cs.target_error;
    skycmd_session *sess = NULL;
    char *line = NULL;
    size_t line_cap = 0, lines = 0;
    skycmd_request *reqs[CAL_BATCH] = {0};
    size_t nreq = 0;
    cal_ctx c;
    memset(&c, 0, sizeof c);
    c.e = &e;
    sk_buf rep;
    sk_buf_init(&rep);
    if (out_path && model->gguf_buf) {
        rc = sk_fail(&e, SKYCMD_E_UNSUPPORTED, "%s: calibrate writes a copy of a GGUF file; convert the "
                     "Laya directory first", model_path);
        goto done;
    }
    if ((rc = skycmd_session_new(model, &sess))) {
        rc = sk_fail(&e, rc, "calibrate: cannot make a session");
        goto done;
    }
    int64_t threads = sk_opt_int(opts, SKYCMD_OPT_THREADS, 1);
    if (threads != 1 && (rc = skycmd_session_set_int(sess, SKYCMD_OPT_THREADS, threads))) {
        rc = sk_fail(&e, rc, "%s", skycmd_session_errmsg(sess));
        goto done;
    }
    sess->logit_sink = sink;
    sess->logit_sink_ud = &c;
    uint64_t done_bytes = 0;
    ssize_t got;
    c.n_pend = 0;
    while (1) {
        got = getline(&line, &line_cap, fp);
        int at_end = got < 0;
        if (!at_end) {
            lines++;
            done_bytes += (uint64_t)got;
            size_t len = (size_t)got;
            while (len && (line[len - 1] == '\n' || line[len - 1] == '\r')) len--;
            size_t sp = 0;
            while (sp < len && (line[sp] == ' ' || line[sp] == '\t')) sp++;
            if (sp < len) {
                skycmd_request *rq = NULL;
                int st = skycmd_request_parse(line, len, &rq);
                if (st) {
                    rc = sk_fail(&e, st, "%s:%zu: %s", labelled_path, lines,
                                 rq ? skycmd_request_errmsg(rq) : skycmd_strerror(st));
                    skycmd_request_free(rq);
                    goto done;
                }
                sk_jdoc d;
                st = sk_json_parse(line, len, &d, &e);
                if (st) { /* cannot happen: the request parsed */
                    skycmd_request_free(rq);
                    rc = st;
                    goto done;
                }
                const sk_jv *tg = sk_jobj_get(&d.root, "targets"), *ex = sk_jobj_get(&d.root, "expected");
                for (size_t qi = 0; qi < rq->r.nq && !st; qi++) {
                    if (c.n_pend == c.cap_pend) {
                        size_t nc = c.cap_pend ? c.cap_pend * 2 : 64;
                        cal_pending *np = realloc(c.pend, nc * sizeof *np);
                        if (!np) {
                            st = sk_fail(&e, SKYCMD_E_NOMEM, "out of memory");
                            break;
                        }
                        c.pend = np;
                        c.cap_pend = nc;
                    }
                    cal_pending *p = &c.pend[c.n_pend];
                    p->qt = rq->r.q[qi].type;
                    p->k = rq->r.q[qi].n_opts;
                    p->line = lines;
                    st = line_target(&rq->r.q[qi], tg, ex, p, &e);
                    if (st) sk_err_prefix(&e, "%s:%zu", labelled_path, lines);
                    else c.n_pend++;
                }
                sk_jdoc_free(&d);
                if (st) {
                    skycmd_request_free(rq);
                    rc = st;
                    goto done;
                }
                reqs[nreq++] = rq;
            }
        }
        if (nreq == CAL_BATCH || (at_end && nreq)) {
            rc = run_batch(sess, reqs, nreq, &c);
            if (rc) sk_err_prefix(&e, "%s", labelled_path);
            for (size_t i = 0; i < nreq; i++) skycmd_request_free(reqs[i]);
            nreq = 0;
            c.n_pend = 0;
            if (rc) goto done;
            if (opts && opts->progress && opts->progress(opts->progress_ud, done_bytes, total)) {
                rc = sk_fail(&e, SKYCMD_E_CANCELLED, "calibrate: cancelled");
                goto done;
            }
        }
        if (at_end) break;
    }
    if (ferror(fp)) {
        const int er = errno;
        rc = sk_fail_errno(&e, SKYCMD_E_IO, er, "%s: read error: %s", labelled_path, strerror(er));
        goto done;
    }
    if (c.set.n == 0) {
        rc = sk_fail(&e, SKYCMD_E_REQUEST, "%s: no labelled questions", labelled_path);
        goto done;
    }
    sk_calib_fit fit;
    sk_calib_fit_temperatures(&c.set, &fit);
    sk_calib_temps before, after;
    sk_calib_temps_from_model(&model->temps, &before);
    sk_calib_temps_from_fit(&fit, &after);
    int ahas[SK_CALIB_BUCKETS] = {0};
    double athr[SK_CALIB_BUCKETS];
    if (abst && (rc = sk_calib_abstention(&c.set, &after, target_error, (size_t)abst_min_n, conservative,
                                          ahas, athr, &e)))
        goto done;
    if (out_path) {
        sk_str arch = {0};
        char archz[64];
        if (sk_gguf_get_str(model->g, "general.architecture", &arch) || arch.len >= sizeof archz) {
            rc = sk_fail(&e, SKYCMD_E_FORMAT, "general.architecture is missing");
            goto done;
        }
        snprintf(archz, sizeof archz, "%.*s", (int)arch.len, arch.ptr);
        if ((rc = sk_calib_write_gguf(model->g, archz, &after, out_path, &e))) goto done;
    }
    if (sk_opt_int(opts, SKYCMD_OPT_JSON, 0))
        write_report(&rep, model_path, labelled_path, out_path, lines, &c.set, &fit, &before, &after,
                     abst, ahas, athr);
    else
        write_text(&rep, lines, &c.set, &fit, &before, &after, abst, ahas, athr);
    if (rep.failed) {
        rc = sk_fail(&e, SKYCMD_E_NOMEM, "out of memory writing the report");
        goto done;
    }
    if (report_json) *report_json = sk_buf_detach(&rep);
done:
    for (size_t i = 0; i < nreq; i++) skycmd_request_free(reqs[i]);
    free(line);
    free(c.pend);
    sk_calib_set_free(&c.set);
    sk_buf_free(&rep);
    skycmd_session_free(sess);
    *ep = e;
    return rc;
}
