/*
 * fuzz_model.c - libFuzzer target for the model loader: GGUF bytes to a model through
 * skycmd_model_open_buffer (the GGUF reader, the hyper-parameters, the decision head keys,
 * the tensor shapes and types each weight must have, the temperatures and the tokenizer
 * from tokenizer.ggml.*).
 *
 * For every input: open it from a buffer of exactly its size (ASan catches any read past the
 * end). The loader either accepts the bytes or fails with a status and a message. An
 * accepted model answers every hyper-parameter query, and its tokenizer encodes and decodes
 * a fixed text. Nothing is run through the forward pass (that is not a parser, and is far
 * too slow for a fuzzer). An accepted model that stores a calibrated int8 model
 * (int8_stored: a valid skycmd.int8.version, src/quant/int8_store.h) is opened a second
 * time as --q8 opens it (--q8-row for a stored row-scaled one: int8_stored 2), where its
 * skycmd.int8.* keys are read; no calibration runs for such a file, so that costs no more
 * than the first open. (Any other --q8 open would calibrate
 * the model, 100x the cost of an open; a damaged version key is test_int8_store's.) Seeds: corpus/model/ (tools/golden/make_fuzz_model_seeds.py:
 * s1-pico's structure at hidden size 32 with a 407-token vocabulary, ~100 KB, with F16 and
 * Q8_0 encoders and two written by `skycmd quantize --calibrated` (and `--q8-row`); the
 * s1-pico-sized seeds made each execution 5x slower and found nothing more).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "skycmd.h"

static const char *const k_params[] = {
    "embedding_length", "block_count", "decision.block_count", "decision.max_head_tokens",
    "decision.max_tokens", "vocab_size", "parameters", "attention.head_count",
    "feed_forward_length", "attention.sliding_window", "attention.sliding_window_pattern",
    "encoder.block_count", "decision.head_count", "weights", "int8_stored", "no-such-parameter"};

static skycmd_error *g_err;
static skycmd_options *g_q8, *g_q8row;

/* An open that fails must fail cleanly: no model, the status in the error, a message. */
static void check_failure(int st, const skycmd_model *m) {
    const char *msg = skycmd_error_message(g_err);
    if (m || skycmd_error_status(g_err) != st || !msg || !msg[0]) __builtin_trap();
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    g_err = skycmd_error_new();
    g_q8 = skycmd_options_new();
    g_q8row = skycmd_options_new();
    if (!g_err || !g_q8 || !g_q8row || skycmd_options_set_int(g_q8, SKYCMD_OPT_WEIGHTS, SKYCMD_WEIGHTS_Q8) ||
        skycmd_options_set_int(g_q8row, SKYCMD_OPT_WEIGHTS, SKYCMD_WEIGHTS_Q8_ROW))
        __builtin_trap();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!g_err) LLVMFuzzerInitialize(NULL, NULL);
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy) return 0;
    if (size) memcpy(copy, data, size);
    skycmd_model *m = NULL;
    int st = skycmd_model_open_buffer(copy, size, NULL, &m, g_err);
    if (st != SKYCMD_OK) {
        check_failure(st, m);
        free(copy);
        return 0;
    }
    if (!m || !skycmd_model_name(m)) __builtin_trap();
    for (size_t i = 0; i < sizeof k_params / sizeof k_params[0]; i++) {
        int64_t v = 0;
        int rc = skycmd_model_get_int(m, k_params[i], &v);
        if ((rc == SKYCMD_OK) != (i + 1 < sizeof k_params / sizeof k_params[0])) __builtin_trap();
    }
    const skycmd_tokenizer *t = skycmd_model_tokenizer(m);
    if (!t) __builtin_trap();
    static const char text[] = "Which input keeps the drone flying? vy 0 dx 36 [MASK] caf\xC3\xA9";
    int32_t ids[256];
    size_t n = 0;
    if (skycmd_tokenizer_encode(t, text, sizeof text - 1, ids, 256, &n) == SKYCMD_OK) {
        char *out = NULL;
        if (skycmd_tokenizer_decode(t, ids, n < 256 ? n : 256, &out) == SKYCMD_OK) skycmd_string_free(out);
    }
    size_t vocab = skycmd_tokenizer_vocab_size(t);
    if (vocab && !skycmd_tokenizer_token(t, (int32_t)(vocab - 1))) __builtin_trap();
    for (int k = 0; k <= SKYCMD_SPECIAL_UNK; k++) (void)skycmd_tokenizer_special_id(t, k);
    int64_t stored = 0;
    if (skycmd_model_get_int(m, "int8_stored", &stored) != SKYCMD_OK) __builtin_trap();
    if (skycmd_model_free(m) != SKYCMD_OK) __builtin_trap();
    if (stored) {  /* the skycmd.int8.* keys, read by the q8 open alone */
        m = NULL;
        st = skycmd_model_open_buffer(copy, size, stored == 2 ? g_q8row : g_q8, &m, g_err);
        if (st != SKYCMD_OK) check_failure(st, m);
        else if (skycmd_model_free(m) != SKYCMD_OK) __builtin_trap();
    }
    free(copy);
    return 0;
}
