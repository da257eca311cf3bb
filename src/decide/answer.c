/* answer.c - temperatures, softmax, answers, confidences and the response JSON.
 * See decide.h for the rules and where each comes from. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "decide.h"

const char *const sk_temp_bucket_names[SK_TEMP_BUCKETS] = {"", "2", "3_5", "6_10", "11"};

double sk_clamp_temperature(double t) {
    if (!isfinite(t)) return 1.0;
    return t < 0.5 ? 0.5 : t > 5.0 ? 5.0 : t;
}

int sk_temp_bucket(size_t k) { return k <= 2 ? 1 : k <= 5 ? 2 : k <= 10 ? 3 : 4; }

void sk_temps_init(sk_temps *t) {
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < SK_TEMP_BUCKETS; j++) t->t[i][j] = NAN;
}

void sk_temps_from_gguf(const sk_gguf *g, const char *arch, sk_temps *out) {
    sk_temps_init(out);
    char prefix[128];
    int pn = snprintf(prefix, sizeof prefix, "%s.decision.temperature.", arch ? arch : "modern-bert");
    if (pn <= 0 || (size_t)pn >= sizeof prefix) return;
    size_t n = sk_gguf_n_kv(g);
    for (size_t i = 0; i < n; i++) {
        sk_str k = sk_gguf_kv_key(g, i);
        if (k.len <= (uint64_t)pn || memcmp(k.ptr, prefix, (size_t)pn) != 0) continue;
        const char *suf = k.ptr + pn;
        size_t sl = (size_t)k.len - (size_t)pn;
        for (int qt = 0; qt < 3; qt++) {
            size_t tl = strlen(sk_qtype_names[qt]);
            if (sl < tl || memcmp(suf, sk_qtype_names[qt], tl) != 0) continue;
            int bucket = -1;
            if (sl == tl) bucket = 0;
            else if (suf[tl] == '.')
                for (int b = 1; b < SK_TEMP_BUCKETS; b++)
                    if (strlen(sk_temp_bucket_names[b]) == sl - tl - 1 &&
                        memcmp(suf + tl + 1, sk_temp_bucket_names[b], sl - tl - 1) == 0)
                        bucket = b;
            if (bucket < 0) continue;
            const sk_gguf_value *v = sk_gguf_kv_value(g, i);
            double t = NAN; /* not a number: clamp_temperature gives 1.0 */
            switch (v->type) {
            case SK_GGUF_F32: case SK_GGUF_F64: t = v->v.f; break;
            case SK_GGUF_U8: case SK_GGUF_U16: case SK_GGUF_U32: case SK_GGUF_U64:
                t = (double)v->v.u; break;
            case SK_GGUF_I8: case SK_GGUF_I16: case SK_GGUF_I32: case SK_GGUF_I64:
                t = (double)v->v.i; break;
            default: break; /* bool, string, array: Python's clamp answers 1.0 */
            }
            out->t[qt][bucket] = sk_clamp_temperature(t);
        }
    }
}

double sk_temp_for(const sk_temps *t, int qtype, size_t k) {
    if (qtype < 0 || qtype > 2) return 1.0;
    double v = t->t[qtype][sk_temp_bucket(k)];
    if (!isnan(v)) return v;
    v = t->t[qtype][0];
    return isnan(v) ? 1.0 : v;
}

void sk_softmax(const float *z, size_t k, double T, double *p) {
    if (!k) return;
    double mx = -INFINITY;
    for (size_t i = 0; i < k; i++) {
        double s = (double)z[i] / T;
        if (s > mx) mx = s;
    }
    double sum = 0;
    for (size_t i = 0; i < k; i++) {
        p[i] = exp((double)z[i] / T - mx);
        sum += p[i];
    }
    for (size_t i = 0; i < k; i++) p[i] /= sum;
}

double sk_conf_choice(const double *p, size_t n) {
    if (n < 2) return 1.0;
    double mx = p[0];
    for (size_t i = 1; i < n; i++)
        if (p[i] > mx) mx = p[i];
    double u = 1.0 / (double)n;
    double c = (mx - u) / (1.0 - u);
    return c > 0 ? c : 0.0;
}

double sk_conf_score(const double *p, size_t n) {
    if (n < 2) return 1.0;
    size_t mode = 0;
    for (size_t i = 1; i < n; i++)
        if (p[i] > p[mode]) mode = i;
    double dist = 0, dist_u = 0, mid = (double)(n - 1) / 2.0;
    for (size_t i = 0; i < n; i++) {
        dist += p[i] * fabs((double)i - (double)mode);
        dist_u += fabs((double)i - mid);
    }
    dist_u /= (double)n;
    double c = 1.0 - dist / dist_u;
    return c > 0 ? c : 0.0;
}

int sk_answer_from_probs(int type, const double *p, size_t n, sk_answer *a, sk_err *e) {
    memset(a, 0, sizeof *a);
    a->type = type;
    a->n = n;
    a->p = p;
    for (size_t i = 0; i < n; i++)
        if (isnan(p[i])) return sk_fail(e, SKYCMD_E_INTERNAL, "the model could not evaluate the decision");
    if (n == 0) return sk_fail(e, SKYCMD_E_INTERNAL, "a question without options reached the model");
    for (size_t i = 1; i < n; i++)
        if (p[i] > p[a->best]) a->best = i;
    switch (type) {
    case SKYCMD_QTYPE_CHOICE:
        a->value = p[a->best];
        a->confidence = sk_conf_choice(p, n);
        break;
    case SKYCMD_QTYPE_SCORE: {
        double s = 0;
        for (size_t i = 0; i < n; i++) s += (double)i * p[i];
        a->value = s;
        a->confidence = sk_conf_score(p, n);
        break;
    }
    default:
        if (n != 2) return sk_fail(e, SKYCMD_E_INTERNAL, "decision result does not match the number of options");
        a->value = p[1];
        a->confidence = NAN;
        break;
    }
    return 0;
}

void sk_json_put_double(sk_buf *b, double x) {
    if (!isfinite(x)) {
        sk_buf_puts(b, "null");
        return;
    }
    char t[32];
    size_t n = sk_py_float_repr(x, 1, t);
    sk_buf_append(b, t, n);
}

/* A request value written back compactly (number lexemes as the caller wrote them). */
static void put_value(sk_buf *b, const sk_jv *v) {
    switch (v->type) {
    case SK_JNULL: sk_buf_puts(b, "null"); break;
    case SK_JTRUE: sk_buf_puts(b, "true"); break;
    case SK_JFALSE: sk_buf_puts(b, "false"); break;
    case SK_JNUM: sk_buf_append(b, v->s, v->n); break;
    case SK_JSTR: sk_pyjson_str(b, v->s, v->n); break;
    case SK_JARR:
        sk_buf_putc(b, '[');
        for (size_t i = 0; i < v->n; i++) {
            if (i) sk_buf_putc(b, ',');
            put_value(b, &v->items[i]);
        }
        sk_buf_putc(b, ']');
        break;
    case SK_JOBJ:
        sk_buf_putc(b, '{');
        for (size_t i = 0; i < v->n; i++) {
            if (i) sk_buf_putc(b, ',');
            sk_pyjson_str(b, v->keys[i].s, v->keys[i].n);
            sk_buf_putc(b, ':');
            put_value(b, &v->items[i]);
        }
        sk_buf_putc(b, '}');
        break;
    default: sk_buf_puts(b, "null"); break;
    }
}

static char *arena_copy(sk_arena *arena, const char *s, size_t n) {
    char *d = sk_arena_alloc(arena, n + 1);
    if (!d) return NULL;
    if (n) memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

sk_answer_json *sk_answer_json_copy(const sk_request *r, const sk_answer *a, sk_arena *arena) {
    sk_answer_json *out = sk_arena_alloc(arena, (r->nq ? r->nq : 1) * sizeof *out);
    sk_buf legend;
    sk_buf_init(&legend);
    for (size_t qi = 0; out && qi < r->nq; qi++) {
        const sk_rquestion *q = &r->q[qi];
        sk_answer_json *o = &out[qi];
        *o = (sk_answer_json){.id = arena_copy(arena, q->id.s, q->id.n), .id_len = q->id.n,
                              .type = q->type, .best = a[qi].best, .value = a[qi].value,
                              .confidence = a[qi].confidence, .n = q->n_opts};
        o->keys = sk_arena_alloc(arena, q->n_opts * sizeof *o->keys);
        o->key_lens = sk_arena_alloc(arena, q->n_opts * sizeof *o->key_lens);
        o->p = sk_arena_alloc(arena, q->n_opts * sizeof *o->p);
        if (!o->id || !o->keys || !o->key_lens || !o->p) out = NULL;
        for (size_t j = 0; out && j < q->n_opts; j++) {
            o->keys[j] = arena_copy(arena, q->opts[j].key.s, q->opts[j].key.n);
            o->key_lens[j] = q->opts[j].key.n;
            o->p[j] = a[qi].p[j];
            if (!o->keys[j]) out = NULL;
        }
        if (out && q->type == SKYCMD_QTYPE_SCORE) {
            legend.len = 0;
            sk_buf_putc(&legend, '{');
            for (size_t i = 0; i < q->n_opts; i++) {
                if (i) sk_buf_putc(&legend, ',');
                sk_pyjson_str(&legend, q->opts[i].key.s, q->opts[i].key.n);
                sk_buf_putc(&legend, ':');
                /* a JSON null level is shown as the string "null", the text the prompt
                 * renders for it: a legend value is never null (the official SDK cannot
                 * parse one) */
                const sk_jv *d = q->opts[i].desc;
                if (d && d->type != SK_JNULL) put_value(&legend, d);
                else sk_buf_puts(&legend, "\"null\"");
            }
            sk_buf_putc(&legend, '}');
            o->legend = legend.failed ? NULL : arena_copy(arena, legend.data, legend.len);
            o->legend_len = legend.len;
            o->level_legends = sk_arena_alloc(arena, q->n_opts * sizeof *o->level_legends);
            if (!o->legend || !o->level_legends) out = NULL;
            for (size_t i = 0; out && i < q->n_opts; i++) {
                const sk_jv *d = q->opts[i].desc;
                o->level_legends[i] = NULL;
                if (!d) continue;
                if (d->type == SK_JNULL) {
                    o->level_legends[i] = arena_copy(arena, "null", 4);
                } else if (d->type == SK_JSTR) {
                    o->level_legends[i] = arena_copy(arena, d->s, d->n);
                } else {
                    legend.len = 0;
                    put_value(&legend, d);
                    o->level_legends[i] =
                        legend.failed ? NULL : arena_copy(arena, legend.data, legend.len);
                }
                if (!o->level_legends[i]) out = NULL;
            }
        }
    }
    sk_buf_free(&legend);
    return out;
}

void sk_answers_gate(sk_answer_json *a, size_t n, const sk_gate *g) {
    for (size_t i = 0; i < n; i++) {
        a[i].gate = SK_GATE_NONE;
        a[i].gate_thr = NAN;
        if (g && g->set) a[i].gate = sk_gate_state(g, a[i].type, a[i].p, a[i].n, &a[i].gate_thr);
    }
}

/* apply_confidence_gate's fields, in laya's order (flag_low_confidence adds its flag first). */
static void put_gate(sk_buf *b, const sk_answer_json *an) {
    if (an->gate == SK_GATE_NONE) return;
    if (an->gate == SK_GATE_ABSTAINED) sk_buf_puts(b, ",\"low_confidence\":true");
    sk_buf_puts(b, ",\"abstention\":\"");
    sk_buf_puts(b, sk_gate_state_name(an->gate));
    sk_buf_puts(b, "\",\"abstention_threshold\":");
    sk_json_put_double(b, an->gate_thr);
}

void sk_response_json_write(sk_buf *b, const char *model_name, const sk_answer_json *a,
                            size_t n, int64_t input_tokens) {
    sk_response_json_write_ext(b, model_name, a, n, input_tokens, NULL);
}

/* The multipass fields of answer an (x: the answer's extra, NULL = none), in laya's names. */
static void put_answer_extra(sk_buf *b, const sk_answer_json *an, const sk_answer_extra *x) {
    if (!x) return;
    if (x->has_window)
        sk_buf_printf(b, ",\"window\":{\"index\":%lld,\"token_start\":%lld,\"token_end\":%lld,"
                         "\"count\":%lld}", (long long)x->w_index, (long long)x->w_start,
                      (long long)x->w_end, (long long)x->w_count);
    if (x->rounds > 0) {
        sk_buf_puts(b, ",\"x_tournament\":{\"finalists\":[");
        for (size_t i = 0; i < x->n_finalists; i++) {
            if (i) sk_buf_putc(b, ',');
            sk_pyjson_str(b, an->keys[x->finalists[i]], an->key_lens[x->finalists[i]]);
        }
        sk_buf_printf(b, "],\"rounds\":%lld", (long long)x->rounds);
        if (x->order_dropped) sk_buf_puts(b, ",\"option_order_dropped\":true");
        sk_buf_putc(b, '}');
    }
}

/* The multipass usage fields, after input_tokens and output_tokens. */
static void put_usage_extra(sk_buf *b, const sk_answer_json *a, size_t n, const sk_response_extra *x) {
    if (!x) return;
    if (x->truncation == 1) {
        sk_buf_printf(b, ",\"state_tokens\":%lld,\"state_tokens_dropped\":%lld,\"truncated\":",
                      (long long)x->state_tokens, (long long)x->state_tokens_dropped);
        if (x->truncated_is_count) sk_buf_printf(b, "%lld", (long long)x->truncated);
        else sk_buf_puts(b, x->truncated ? "true" : "false");
        sk_buf_puts(b, ",\"truncated_questions\":[");
        int first = 1;
        for (size_t i = 0; x->a && i < n; i++)
            if (x->a[i].truncated == 1) {
                if (!first) sk_buf_putc(b, ',');
                first = 0;
                sk_pyjson_str(b, a[i].id, a[i].id_len);
            }
        sk_buf_putc(b, ']');
        first = 1;
        for (size_t i = 0; x->a && i < n; i++)
            if (x->a[i].options_distinct >= 0) {
                sk_buf_puts(b, first ? ",\"options\":{" : ",");
                first = 0;
                sk_pyjson_str(b, a[i].id, a[i].id_len);
                sk_buf_printf(b, ":{\"total\":%zu,\"distinct\":%lld,\"tokens_per_option\":", a[i].n,
                              (long long)x->a[i].options_distinct);
                if (x->a[i].tokens_per_option >= 0)
                    sk_buf_printf(b, "%lld}", (long long)x->a[i].tokens_per_option);
                else sk_buf_puts(b, "null}");
            }
        if (!first) sk_buf_putc(b, '}');
    }
    if (x->windows_on) sk_buf_printf(b, ",\"windows\":%lld", (long long)x->windows);
}

void sk_response_json_write_ext(sk_buf *b, const char *model_name, const sk_answer_json *a,
                                size_t n, int64_t input_tokens, const sk_response_extra *x) {
    const sk_answer_extra *ax = x ? x->a : NULL;
    sk_buf_puts(b, "{\"model\":");
    const char *mn = model_name ? model_name : "";
    sk_pyjson_str(b, mn, strlen(mn));
    sk_buf_puts(b, ",\"answers\":{");
    for (size_t qi = 0; qi < n; qi++) {
        const sk_answer_json *an = &a[qi];
        if (qi) sk_buf_putc(b, ',');
        sk_pyjson_str(b, an->id, an->id_len);
        sk_buf_puts(b, ":{\"type\":\"");
        sk_buf_puts(b, sk_qtype_names[an->type]);
        sk_buf_puts(b, "\",");
        if (an->type == SKYCMD_QTYPE_NOUL) {
            sk_buf_puts(b, "\"noul\":");
            sk_json_put_double(b, an->value);
            put_answer_extra(b, an, ax ? &ax[qi] : NULL);
            put_gate(b, an);
            sk_buf_putc(b, '}');
            continue;
        }
        if (an->type == SKYCMD_QTYPE_CHOICE) {
            sk_buf_puts(b, "\"choice\":");
            sk_pyjson_str(b, an->keys[an->best], an->key_lens[an->best]);
        } else {
            sk_buf_puts(b, "\"score\":");
            sk_json_put_double(b, an->value);
            sk_buf_puts(b, ",\"legend\":");
            sk_buf_append(b, an->legend, an->legend_len);
        }
        sk_buf_puts(b, ",\"probabilities\":{");
        for (size_t i = 0; i < an->n; i++) {
            if (i) sk_buf_putc(b, ',');
            sk_pyjson_str(b, an->keys[i], an->key_lens[i]);
            sk_buf_putc(b, ':');
            sk_json_put_double(b, an->p[i]);
        }
        sk_buf_puts(b, "},\"confidence\":");
        sk_json_put_double(b, an->confidence);
        put_answer_extra(b, an, ax ? &ax[qi] : NULL);
        put_gate(b, an);
        sk_buf_putc(b, '}');
    }
    sk_buf_printf(b, "},\"usage\":{\"input_tokens\":%lld,\"output_tokens\":0",
                  (long long)input_tokens);
    put_usage_extra(b, a, n, x);
    sk_buf_puts(b, "}}");
}
