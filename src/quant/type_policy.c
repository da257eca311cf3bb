/*
 * type_policy.c - the tensor type policy: which ggml type each tensor of a decision model
 * gets, for `skycmd convert` (src/convert, sk_convert_tensor_type), `skycmd quantize`
 * (quantize_gguf.c) and the int8 weights modes at load (src/model/int8.c) alike; and which
 * tensors belong to the decision head. See quant.h.
 */
#include <string.h>

#include "quant.h"

int sk_quant_is_head(const char *name, uint32_t first_head_block) {
    if (strncmp(name, "token_types.", 12) == 0 || strncmp(name, "cls.", 4) == 0) return 1;
    if (strncmp(name, "blk.", 4) != 0) return 0;
    const char *p = name + 4;
    uint64_t n = 0;
    int digits = 0;
    while (*p >= '0' && *p <= '9' && digits < 10) {
        n = n * 10 + (uint64_t)(*p - '0');
        p++;
        digits++;
    }
    if (!digits || *p != '.') return 0;
    return n >= first_head_block;
}

uint32_t sk_quant_policy(const char *name, int is_head, uint32_t n_dims, uint64_t ne0,
                         uint32_t type, uint32_t head_type) {
    uint32_t ty;
    if (n_dims < 2)
        ty = SK_GGML_F32; /* norms and biases */
    else if (is_head)
        ty = head_type;
    else if (strcmp(name, "token_embd.weight") == 0 && type == SK_GGML_Q8_0)
        ty = SK_GGML_F16; /* a lookup gains nothing from int8, and loses accuracy */
    else
        ty = type;
    if (ty == SK_GGML_Q8_0 && ne0 % SK_QK8_0 != 0) ty = SK_GGML_F16; /* as llama.cpp */
    return ty;
}
