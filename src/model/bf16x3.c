/*
 * bf16x3.c - the SKYCMD_WEIGHTS_BF16X3 mode, applied after the load: the encoder's matrix
 * products move to the CPU's BF16 matrix unit, the AMX BF16 tiles on x86-64
 * (src/kernels/amx.c) or BFMMLA on aarch64 with FEAT_BF16 (src/kernels/bf16_neon.c). f32 and
 * f16 matrices become bf16 hi + lo pairs (three products: f32-accuracy class, ~1e-5 relative
 * per product), matrices of a BF16 file stay bf16 exactly (two products: only the
 * activations are split). Where no unit is usable (no AMX or FEAT_BF16, the OS refused the
 * tile state, SKYCMD_KERNELS caps it) nothing changes and the load log says so: the f32
 * kernels run as in SKYCMD_WEIGHTS_F32. The decision head's Linears move too, except the
 * last block's key/value matrix (the folded attention reads it in place through other
 * views). Attention's own products move only on AMX (model.attn_tiles).
 * sk_model_int8_floats_to_amx_bf16 does the same for what the int8 modes leave in float on
 * AMX CPUs: the decision head (kept f32 by the int8 method; a sixth of a base question's
 * time on the f32 kernels) and the encoder matrices the calibration kept in f32 (a quarter
 * of the sites; on a base model 1.4x the request's speed, for their panels at 4 bytes a
 * weight); the bf16x3 products keep them in the f32 accuracy class (~1e-5 relative).
 * SKYCMD_KERNELS=avx512 (or no AMX) keeps them on the f32 kernels.
 * Both set model.attn_tiles where the tiles are usable: the attention products then run
 * on them as well (forward.c, attn_unit_tiles).
 */
#include <stdlib.h>

#include "model_internal.h"
#include "../kernels/cpu.h"

/* L's float panels into the unit's bf16 layout, counted in *n and *bytes (a Linear already
 * moved, int8 or a view is left as it is). */
static int to_bf16_unit(sk_linear *L, int unit, size_t *bytes, size_t *n) {
    if (L->q8 || !L->p.data || L->p.rstride || L->p.wtype > SK_PACK_BF16) return 0;
    const int exact = L->p.wtype == SK_PACK_BF16, amx = unit == SK_BF16_UNIT_AMX;
    const int wtype = amx ? (exact ? SK_PACK_AMX_BF16X2 : SK_PACK_AMX_BF16X3)
                          : (exact ? SK_PACK_NEON_BF16X2 : SK_PACK_NEON_BF16X3);
    const size_t elems = amx ? sk_amx_bf16_packed_elems(L->p.n_out, L->p.n_in)
                             : sk_neon_bf16_packed_elems(L->p.n_out, L->p.n_in);
    size_t nb;
    if (!elems || sk_mul_size(elems, sk_pack_elem_size(wtype), &nb) || nb > SIZE_MAX - 64)
        return SKYCMD_E_NOMEM;
    uint16_t *buf = aligned_alloc(64, (nb + 63) / 64 * 64);
    if (!buf) return SKYCMD_E_NOMEM;
    if (amx)
        sk_pack_amx_bf16(&L->p, wtype, buf);
    else
        sk_pack_neon_bf16(&L->p, wtype, buf);
    free(L->buf);
    L->buf = buf;
    L->p.data = buf;
    L->p.wtype = wtype;
    L->p.pstride = elems / ((L->p.n_out + SK_PANEL - 1) / SK_PANEL);
    *bytes += nb;
    (*n)++;
    return 0;
}


int sk_bf16x3_unit(void) {
    if (sk_amx_bf16_usable()) return SK_BF16_UNIT_AMX;
    if (sk_neon_bf16_usable()) return SK_BF16_UNIT_NEON;
    return SK_BF16_UNIT_NONE;
}

/* The decision head's matrices that run as plain Linears: every one of the blocks before
 * the last; of the last block q, out, up and down (its kv stays float panels: the folded
 * attention reads it through views and build_key_transposes reads it back, load.c). */
static int head_to_bf16_unit(sk_model *m, int unit, size_t *bytes, size_t *n) {
    for (uint32_t j = 0; j < m->hp.n_head_layers; j++) {
        sk_head_layer *H = &m->head[j];
        const int last = j + 1 == m->hp.n_head_layers;
        sk_linear *list[] = {&H->q, &H->out, &H->up, &H->down, &H->kv};
        for (size_t i = 0; i < (last ? 4u : 5u); i++)
            if (to_bf16_unit(list[i], unit, bytes, n)) return SKYCMD_E_NOMEM;
    }
    return SKYCMD_OK;
}

/* The encoder's float matrices (all of them in bf16x3; in the int8 modes those the
 * calibration kept in f32). */
static int encoder_to_bf16_unit(sk_model *m, int unit, size_t *bytes, size_t *n) {
    for (uint32_t l = 0; l < m->hp.n_layer; l++) {
        sk_linear *list[] = {&m->enc[l].qkv, &m->enc[l].out, &m->enc[l].up, &m->enc[l].down};
        for (size_t i = 0; i < 4; i++)
            if (to_bf16_unit(list[i], unit, bytes, n)) return SKYCMD_E_NOMEM;
    }
    return SKYCMD_OK;
}

int sk_model_int8_floats_to_amx_bf16(sk_model *m, skycmd_log_fn log, void *log_ud, sk_err *e) {
    if (!sk_amx_bf16_usable()) return SKYCMD_OK;  /* the f32 kernels, as before */
    size_t bytes = 0, n = 0;
    if (encoder_to_bf16_unit(m, SK_BF16_UNIT_AMX, &bytes, &n))
        return sk_fail(e, SKYCMD_E_NOMEM, "out of memory relaying out matrices for AMX");
    const size_t n_enc = n;
    if (head_to_bf16_unit(m, SK_BF16_UNIT_AMX, &bytes, &n))
        return sk_fail(e, SKYCMD_E_NOMEM, "out of memory relaying out matrices for AMX");
    m->attn_tiles = 1;
    sk_model_log(log, log_ud, 1, "int8 on AMX: %zu encoder matrices kept in f32, %zu decision-head "
                 "matrices and the attention products on AMX-BF16 tiles as bf16 hi+lo (%zu bytes)",
                 n_enc, n - n_enc, bytes);
    return SKYCMD_OK;
}

int sk_model_to_bf16x3(sk_model *m, skycmd_log_fn log, void *log_ud, sk_err *e) {
    const int unit = sk_bf16x3_unit();
    if (unit == SK_BF16_UNIT_NONE) {
        sk_model_log(log, log_ud, 1, "bf16x3: no usable BF16 matrix unit here (AMX-BF16 or FEAT_BF16; cpu: "
             "%s%s): f32 kernels", skycmd_cpu_features(),
             sk_amx_usable() || (sk_cpu_features() & SK_CPU_ARM_BF16) ? "; capped by SKYCMD_KERNELS or not granted" : "");
        m->weights_mode = SKYCMD_WEIGHTS_F32;  /* what runs, for skycmd_model_get_int */
        return SKYCMD_OK;
    }
    const char *what = unit == SK_BF16_UNIT_AMX ? "AMX-BF16 tiles" : "BFMMLA (FEAT_BF16)";
    size_t bytes = 0, n = 0;
    if (encoder_to_bf16_unit(m, unit, &bytes, &n))
        return sk_fail(e, SKYCMD_E_NOMEM, "out of memory relaying out matrices for %s", what);
    const size_t n_enc = n;
    if (head_to_bf16_unit(m, unit, &bytes, &n))
        return sk_fail(e, SKYCMD_E_NOMEM, "out of memory relaying out matrices for %s", what);
    m->attn_tiles = unit == SK_BF16_UNIT_AMX;
    sk_model_log(log, log_ud, 1, "bf16x3: %zu encoder and %zu decision-head matrices%s on %s (%zu bytes; "
         "f32/f16 as bf16 hi+lo, bf16 as is)", n_enc, n - n_enc,
         m->attn_tiles ? " and the attention products" : "", what, bytes);
    return SKYCMD_OK;
}
