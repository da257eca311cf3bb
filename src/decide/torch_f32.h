/*
 * torch_f32.h - torch 2.15's CPU float32 arithmetic for the few kernels laya's temperature
 * fit runs (laya.calibrate._fit_unclamped_temperature), reproduced bit for bit so that our
 * LBFGS sees the same losses and gradients and so stops at the same iteration.
 *
 * Established by probing torch 2.15.0 (AVX512 capability, one thread) against these
 * functions: bitwise equal on every loss and gradient of the fixtures' fits, and on seeded
 * inputs for each piece (tools/golden/make_torch_f32_golden.py -> torch_f32.json, checked
 * by tests/test_calibrate.c).
 *  - Vectorized<float>::exp / ::log (log_softmax forward and backward): SLEEF's expf_u10 and
 *    logf_u10 (AVX-512 variant: getexp/getmant), implemented from SLEEF's published
 *    algorithm and coefficients.
 *  - sum(): cascade_sum with AVX2 vectors of 8 (torch registers no AVX-512 sum kernel): a
 *    4-way ILP, 4-level cascade of 8-lane accumulators, then the scalar tail, then the lanes.
 *  - log_softmax over a row: vec::reduce_all / map_reduce_all with AVX-512 vectors of 16
 *    (a row narrower than 16 is summed left to right).
 * Modelled, not reproduced: torch.exp on a tensor (the scale exp(log T)) is MKL's vsExp,
 * whose algorithm is not published; sk_tf32_mkl_exp is a model fitted to its outputs that
 * differs from it on ~5e-5 of arguments (a difference at one of a fit's ~100 evaluations
 * can move where LBFGS stops).
 * Multi-threaded torch splits sums over 32,768 elements differently; one thread is assumed.
 * Every function here must be compiled without FP contraction (CMakeLists.txt).
 */
#ifndef SK_TORCH_F32_H
#define SK_TORCH_F32_H

#include <stddef.h>

float sk_tf32_exp(float x);                  /* SLEEF expf_u10 */
float sk_tf32_log(float x);                  /* SLEEF logf_u10, for finite x >= FLT_MIN */
float sk_tf32_sum(const float *v, size_t n); /* torch.sum of a contiguous float32 vector */
/* log_softmax of one row of w values into out[w] (u - max - log(sum exp(u - max))). */
void sk_tf32_log_softmax_row(const float *u, size_t w, float *out);
/* The sum torch's log_softmax backward takes over a row of w gradients. */
float sk_tf32_row_reduce_sum(const float *g, size_t w);
/* A model of torch.exp on a float32 tensor (MKL vsExp); see the definition. */
float sk_tf32_mkl_exp(float x);

#endif
