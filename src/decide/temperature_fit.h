/*
 * temperature_fit.h - laya.calibrate 0.4.15 on records (qtype, raw logits, target, k): the
 * temperature fit (fit_temperature_map without the holdout), the ECE report, the per-bucket
 * abstention thresholds (fit_abstention_thresholds, no binning map) and the GGUF rewrite
 * that stores the fitted temperatures as <arch>.decision.temperature.* keys.
 *
 *  - The fit is laya's: NLL of softmax(z / T) over the records, LBFGS on log T (torch's
 *    algorithm: lr 0.1, 100 iterations, no line search, its tolerances 1e-7 / 1e-9 and
 *    history 100), the search band [log 0.5 - 10, log 5 + 10], then clamp_temperature.
 *    Everything the optimiser sees is torch 2.15's float32 arithmetic bit for bit
 *    (torch_f32.h: its SLEEF exp/log, cascade sums, fused multiply-adds, autograd order),
 *    because its stopping rule (two float32 losses within 1e-9, i.e. equal) decides where
 *    it stops; only the scale exp(log T) is MKL's and is modelled (~5e-5 of arguments
 *    differ). On laya's own records the fits equal laya's exactly.
 *  - Floors: a type-level scalar needs MIN_TYPE_N = 10 records (else 1.0), a bucket
 *    MIN_BUCKET_N = 2000 (else it is left out and the type's scalar covers it).
 *  - ECE: laya.common.ece_score (15 bins) on max(p) of laya's _softmax (double, T floored
 *    at 1e-3), correct = argmax p == argmax target.
 *  - Buckets are laya's spelling ("choice:3-5"); in the GGUF they are "<type>.<size>" with
 *    sizes 2, 3_5, 6_10, 11 (decide.h).
 */
#ifndef SK_TEMPERATURE_FIT_H
#define SK_TEMPERATURE_FIT_H

#include <stddef.h>
#include <stdint.h>

#include "../gguf/gguf.h"
#include "decide.h"

#define SK_CALIB_MIN_BUCKET_N 2000
#define SK_CALIB_MIN_TYPE_N 10
#define SK_CALIB_BUCKETS 12     /* type * 4 + size index */

typedef struct sk_calib_rec {
    int qt;          /* 0 choice, 1 score, 2 noul */
    uint32_t k;      /* options */
    size_t off;      /* z and t at set->z + off, set->t + off */
} sk_calib_rec;

typedef struct sk_calib_set {
    sk_calib_rec *r;
    size_t n, cap;
    float *z, *t;    /* k values per record, back to back */
    size_t nv, vcap;
} sk_calib_set;

void sk_calib_set_free(sk_calib_set *s);
/* Append one record after laya's _validated_pair checks (finite values, target >= 0 and
 * summing to 1 within rtol 1e-5 / atol 1e-6, same length). SKYCMD_E_REQUEST with the
 * reason otherwise. */
int sk_calib_add(sk_calib_set *s, int qt, const float *z, const double *t, size_t k, sk_err *e);

/* Bucket index (type * 4 + size) and its laya name. */
int sk_calib_bucket(int qt, size_t k);
extern const char *const sk_calib_bucket_names[SK_CALIB_BUCKETS];

typedef struct sk_calib_fit {
    double temperature[3];              /* applied (clamped) */
    double type_raw[3];                 /* unclamped optimum; NAN when not fitted */
    size_t type_n[3];
    int has_bucket[SK_CALIB_BUCKETS];
    double bucket_t[SK_CALIB_BUCKETS];  /* applied */
    double bucket_raw[SK_CALIB_BUCKETS];
    size_t bucket_n[SK_CALIB_BUCKETS];  /* n_by_bucket (all records) */
    int bucket_order[SK_CALIB_BUCKETS]; /* buckets in first-seen order (laya's dict order) */
    int n_buckets_seen;
    int iterations[3 + SK_CALIB_BUCKETS];
} sk_calib_fit;

/* fit_temperature_map(records) (compute_ece=False). progress(ud, done, total) per fit. */
void sk_calib_fit_temperatures(const sk_calib_set *s, sk_calib_fit *out);
/* _fit_unclamped_temperature on the records idx[0..n) (min_n applies); *iters if non-NULL. */
double sk_calib_fit_one(const sk_calib_set *s, const size_t *idx, size_t n, size_t min_n, int *iters);

/* The temperature of a record under (temperature[3], buckets) as laya looks it up. */
typedef struct sk_calib_temps {
    double temperature[3];
    int has_bucket[SK_CALIB_BUCKETS];
    double bucket_t[SK_CALIB_BUCKETS];
} sk_calib_temps;
void sk_calib_temps_from_fit(const sk_calib_fit *f, sk_calib_temps *t);
/* The model's own temperatures (decide.h lookup) in this form. */
void sk_calib_temps_from_model(const sk_temps *mt, sk_calib_temps *t);
void sk_calib_temps_identity(sk_calib_temps *t);

/* ECE (laya.common.ece_score, 15 bins) of the records of type qt (-1: all) under t. */
double sk_calib_ece(const sk_calib_set *s, int qt, const sk_calib_temps *t, size_t *n_out);

/* fit_abstention_thresholds: has[b] / thr[b] per bucket with >= min_n records. */
int sk_calib_abstention(const sk_calib_set *s, const sk_calib_temps *t, double target_error,
                        size_t min_n, int conservative, int has[SK_CALIB_BUCKETS],
                        double thr[SK_CALIB_BUCKETS], sk_err *e);

/* Write `g` (opened from a file) to out_path with every <arch>.decision.temperature.<type>
 * [.<size>] key replaced by t: the three type keys and the buckets t has, as F32, at the
 * place of the first temperature key (the others removed); every other key, the tensor
 * table and the tensor data byte for byte as they were. Atomic (<out>.skycmd-partial.*). */
int sk_calib_write_gguf(const sk_gguf *g, const char *arch, const sk_calib_temps *t,
                        const char *out_path, sk_err *e);

#endif
