/*
 * bench_report.c - the reporting part of `skycmd bench` (bench.h): a measured bench_run
 * printed on stdout, as one JSON document (--json; NaN and infinities become null) or as
 * text. The figures derived here (GFLOP/s, questions/s, tokens/s, fractions of the peak)
 * come from the run's medians; nothing is measured and nothing is printed on stderr.
 */
#include <math.h>
#include <stdio.h>

#include "bench.h"

#define N_KINDS BENCH_KINDS
#define kind_name bench_kind_name

/* What the report derives from the medians. */
typedef struct derived {
    double gflops, gflops_cpu, qps, tps, gguf_bytes, rss_bytes;
} derived;

static derived derive(const bench_args *A, const bench_run *r) {
    derived d;
    d.gflops = r->req_st.median > 0 ? r->req_flops / r->req_st.median * 1e-9 : NAN;
    /* per CPU-second of the process: robust to time slices lost on a shared machine */
    d.gflops_cpu = r->cpu_st.median > 0 ? r->req_flops / r->cpu_st.median * 1e-9 : NAN;
    d.qps = (double)A->questions / r->req_st.median;
    d.tps = (double)r->req_tokens / r->req_st.median;
    d.gguf_bytes = (double)r->gguf_size;
    d.rss_bytes = (double)r->rss * 1024.0;
    return d;
}

static void json_str(const char *s) {
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
        if (*p == '"' || *p == '\\') printf("\\%c", *p);
        else if (*p < 0x20) printf("\\u%04x", *p);
        else putchar(*p);
    }
    putchar('"');
}

/* JSON numbers: NaN/inf become null. */
static void json_num(const char *key, double v, int last) {
    if (isfinite(v)) printf("\"%s\":%.6g%s", key, v, last ? "" : ",");
    else printf("\"%s\":null%s", key, last ? "" : ",");
}

/* A KiB figure as bytes, null when unknown (< 0); never the last member. */
static void json_kib_bytes(const char *key, long kib) {
    if (kib >= 0) printf("\"%s\":%.0f,", key, (double)kib * 1024.0);
    else printf("\"%s\":null,", key);
}

static void json_stats_ms(const char *key, const bench_stats *s, int last) {
    printf("\"%s\":{\"n\":%zu,", key, s->n);
    json_num("median_ms", s->median * 1e3, 0);
    json_num("p90_ms", s->p90 * 1e3, 0);
    json_num("p99_ms", s->p99 * 1e3, 0);
    json_num("min_ms", s->min * 1e3, 0);
    json_num("mean_ms", s->mean * 1e3, 1);
    printf("}%s", last ? "" : ",");
}

static void text_stats(const char *label, const bench_stats *s) {
    if (!s->n) return;
    printf("  %-22s median %9.3f ms  p90 %9.3f  p99 %9.3f  min %9.3f  (n=%zu)\n", label,
           s->median * 1e3, s->p90 * 1e3, s->p99 * 1e3, s->min * 1e3, s->n);
}

static void report_json(const bench_args *A, const bench_run *r) {
    const derived d = derive(A, r);
    const bench_hyper *hp = &r->hp;
    printf("{\"model\":");
    json_str(skycmd_model_name(r->model));
    printf(",\"path\":");
    json_str(A->preset ? "" : r->path);
    printf(",\"random\":");
    if (A->preset) json_str(A->preset);
    else printf("null");
    printf(",\"mode\":\"%s\",\"threads\":%ld,\"questions\":%lld,\"build\":", r->mode, r->threads,
           A->questions);
    json_str(skycmd_build_id());
    printf(",\"cpu_features\":");
    json_str(r->feat);
    printf(",\"kernels\":");
    json_str(r->kernels);
    printf(",\"parameters\":%lld,\"gguf_bytes\":%lld,", (long long)hp->params, r->gguf_size);
    printf("\"hparams\":{\"embedding_length\":%lld,\"encoder_blocks\":%lld,"
           "\"feed_forward_length\":%lld,\"sliding_window\":%lld,\"sliding_window_pattern\":"
           "%lld,\"head_blocks\":%lld,\"max_tokens\":%lld},",
           (long long)hp->d, (long long)hp->layers, (long long)hp->ff, (long long)hp->window,
           (long long)hp->pattern, (long long)hp->head_layers, (long long)r->max_tokens);
    if (A->preset) json_num("generate_s", r->gen_s, 0);
    json_num("open_ms", r->t_open * 1e3, 0);
    json_num("load_ms", r->t_load * 1e3, 0);
    json_num("first_decide_ms", r->t_first * 1e3, 0);
    printf("\"page_cache\":\"%s\",", A->drop_cache ? "dropped" : "as found");
    printf("\"peak_rss_bytes\":%.0f,\"rss_before_load_bytes\":%.0f,", d.rss_bytes,
           (double)r->rss_before * 1024.0);
    json_num("rss_over_gguf", d.rss_bytes / d.gguf_bytes, 0);
    json_kib_bytes("rss_after_load_bytes", r->rss_loaded);
    json_kib_bytes("session_scratch_bytes", r->scratch);
    printf("\"request_tokens\":%lld,", (long long)r->req_tokens);
    json_num("request_gflop", r->req_flops * 1e-9, 0);
    printf("\"kinds\":{");
    for (int k = 0; k < N_KINDS; k++) {
        const bench_kind *kr = &r->kind[k];
        printf("%s\"%s\":{\"tokens\":%lld,\"markers\":%zu,", k ? "," : "", kind_name[k],
               (long long)kr->tokens, kr->markers);
        json_num("gflop", kr->flops * 1e-9, !A->single);
        if (A->single) {
            json_stats_ms("single", &kr->st, 0);
            json_num("single_gflops", kr->flops / kr->st.median * 1e-9, 1);
        }
        printf("}");
    }
    printf("},");
    json_stats_ms("request", &r->req_st, 0);
    json_stats_ms("per_question", &r->q_st, 0);
    if (A->single) json_stats_ms("single_question", &r->single_all, 0);
    json_num("questions_per_s", d.qps, 0);
    json_num("tokens_per_s", d.tps, 0);
    json_num("gflops", d.gflops, 0);
    json_stats_ms("request_cpu", &r->cpu_st, 0);
    json_num("gflops_per_cpu_s", d.gflops_cpu, 0);
    json_num("rss_added_bytes", d.rss_bytes - (double)r->rss_before * 1024.0, 0);
    printf("\"peak\":{\"isa\":\"%s\",", r->isa);
    json_num("ms", (double)A->peak_ms, 0);
    json_num("gflops_1_thread", r->peak1, 0);
    json_num("gflops_threads", r->peakT, 0);
    json_num("fraction_of_1_thread", d.gflops / r->peak1, 0);
    json_num("fraction_of_threads", d.gflops / r->peakT, 0);
    json_num("cpu_fraction_of_1_thread", d.gflops_cpu / r->peak1, !r->int8_isa);
    if (r->int8_isa) { /* int8 weights: the same operations against the dot-product peak */
        printf("\"int8_isa\":\"%s\",", r->int8_isa);
        json_num("gops_1_thread", r->peak8_1, 0);
        json_num("gops_threads", r->peak8_T, 0);
        json_num("int8_fraction_of_1_thread", d.gflops / r->peak8_1, 0);
        json_num("int8_cpu_fraction_of_1_thread", d.gflops_cpu / r->peak8_1, 1);
    }
    printf("},\"loadavg_start\":[%.2f,%.2f,%.2f],\"loadavg_end\":[%.2f,%.2f,%.2f]}\n",
           r->la0[0], r->la0[1], r->la0[2], r->la1[0], r->la1[1], r->la1[2]);
}

/* The compute lines: achieved GFLOP/s against the peaks, and per CPU-second. */
static void text_compute(const bench_args *A, const bench_run *r, const derived *d) {
    printf("  compute                %.2f GFLOP/s", d->gflops);
    if (A->peak_ms > 0) {
        printf(" = %.1f%% of 1-thread %s peak %.1f GFLOP/s", 100 * d->gflops / r->peak1,
               r->isa, r->peak1);
        if (r->threads > 1)
            printf(", %.1f%% of %ld-thread peak %.1f", 100 * d->gflops / r->peakT, r->threads,
                   r->peakT);
    }
    printf("\n  compute per CPU-s      %.2f GFLOP per CPU-second (CPU %.3f ms per request)",
           d->gflops_cpu, r->cpu_st.median * 1e3);
    if (A->peak_ms > 0) printf(" = %.1f%% of one core's peak", 100 * d->gflops_cpu / r->peak1);
    if (A->peak_ms > 0 && r->int8_isa)
        printf("\n  int8 per CPU-s         %.1f%% of one core's %s peak %.1f GOP/s", 100 * d->gflops_cpu / r->peak8_1,
               r->int8_isa, r->peak8_1);
}

static void report_text(const bench_args *A, const bench_run *r) {
    const derived d = derive(A, r);
    const bench_hyper *hp = &r->hp;
    printf("skycmd bench: %s (%s%s%s), %s, %ld thread%s, %s\n", skycmd_model_name(r->model),
           A->preset ? "random " : r->path, A->preset ? A->preset : "", "", r->mode, r->threads,
           r->threads == 1 ? "" : "s", skycmd_build_id());
    printf("  cpu features           %s\n", r->feat);
    printf("  kernels                %s\n", r->kernels);
    printf("  parameters             %lld   GGUF %.1f MB   d=%lld layers=%lld+%lld ff=%lld "
           "window=%lld/%lld\n", (long long)hp->params, d.gguf_bytes / 1e6, (long long)hp->d,
           (long long)hp->layers, (long long)hp->head_layers, (long long)hp->ff,
           (long long)hp->window, (long long)hp->pattern);
    if (A->preset) printf("  generate               %.2f s (child process)\n", r->gen_s);
    printf("  load                   %.3f ms (open %.3f ms + first session; page cache %s)\n",
           r->t_load * 1e3, r->t_open * 1e3, A->drop_cache ? "dropped" : "as found");
    printf("  first decide           %.3f ms\n", r->t_first * 1e3);
    printf("  peak RSS               %.1f MB (%.2fx the GGUF; %.1f MB before the load)\n",
           d.rss_bytes / 1e6, d.rss_bytes / d.gguf_bytes, (double)r->rss_before * 1024.0 / 1e6);
    if (r->rss_loaded >= 0 && r->scratch >= 0)
        printf("  resident               %.1f MB after the load; a session's buffers %.1f MB\n",
               (double)r->rss_loaded * 1024.0 / 1e6, (double)r->scratch * 1024.0 / 1e6);
    printf("  request                %lld questions, %lld tokens, %.3f GFLOP\n", A->questions,
           (long long)r->req_tokens, r->req_flops * 1e-9);
    for (int k = 0; k < N_KINDS; k++)
        printf("    %-8s             %lld tokens, %zu markers, %.4f GFLOP\n", kind_name[k],
               (long long)r->kind[k].tokens, r->kind[k].markers, r->kind[k].flops * 1e-9);
    text_stats("request latency", &r->req_st);
    text_stats("per question", &r->q_st);
    if (A->single) {
        text_stats("single question (all)", &r->single_all);
        for (int k = 0; k < N_KINDS; k++) {
            char label[40];
            snprintf(label, sizeof label, "single %s", kind_name[k]);
            text_stats(label, &r->kind[k].st);
        }
    }
    printf("  throughput             %.1f questions/s, %.0f tokens/s\n", d.qps, d.tps);
    text_compute(A, r, &d);
    printf("\n  load average           %.2f at start, %.2f at end\n", r->la0[0], r->la1[0]);
}

void bench_report(const bench_args *a, const bench_run *r) {
    if (a->json) report_json(a, r);
    else report_text(a, r);
}
