/*
 * gguf_describe.c - the human and JSON descriptions of an open GGUF file behind
 * `skycmd inspect` / skycmd_inspect().
 *
 * Contract: the text form follows the gguf-inspect layout of the book:
 *   <label>: GGUF v3, <size> bytes, alignment <a>
 *   <blank>
 *   <n> metadata keys:
 *     <key> (<type>) = <value>          arrays: (array[<elem>; <count>]) = [..., ...]
 *   <n> tensors (ggml dims, ne[0] = innermost):
 *     <name:40> <dims:22> <type:6> <bytes:10> bytes
 *   total: <P> parameters, <B> bytes of tensor data
 * Arrays (nested ones too) show at most max_array items followed by "...". Strings are
 * quoted with \" \\ \n \r \t \u{..} escapes and \xNN for bytes that are not UTF-8, so
 * hostile bytes cannot reach the terminal raw. Unknown tensor types show as other(N) with
 * "?" bytes. The JSON form (one document, cJSON) carries the same content; integers are
 * written exactly (u64 included) and strings that are not valid UTF-8 (or contain NUL) get
 * U+FFFD in place of the bad bytes so the document stays valid.
 */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"

/* Length of the valid UTF-8 sequence at p (1..4), or 0 if the bytes there are not one. */
static size_t utf8_seq(const unsigned char *p, size_t left) {
    size_t n;
    if (p[0] < 0x80) return 1;
    if (p[0] >= 0xC2 && p[0] <= 0xDF) n = 2;
    else if (p[0] >= 0xE0 && p[0] <= 0xEF) n = 3;
    else if (p[0] >= 0xF0 && p[0] <= 0xF4) n = 4;
    else return 0;
    if (n > left) return 0;
    return sk_utf8_valid((const char *)p, n) ? n : 0;
}

static void text_str(sk_buf *b, sk_str s) {
    const unsigned char *p = (const unsigned char *)s.ptr;
    size_t n = (size_t)s.len;
    sk_buf_putc(b, '"');
    for (size_t i = 0; i < n;) {
        unsigned char c = p[i];
        if (c == '"') sk_buf_puts(b, "\\\"");
        else if (c == '\\') sk_buf_puts(b, "\\\\");
        else if (c == '\n') sk_buf_puts(b, "\\n");
        else if (c == '\r') sk_buf_puts(b, "\\r");
        else if (c == '\t') sk_buf_puts(b, "\\t");
        else if (c < 0x20 || c == 0x7f) sk_buf_printf(b, "\\u{%x}", c);
        else {
            size_t k = utf8_seq(p + i, n - i);
            if (k == 0) {
                sk_buf_printf(b, "\\x%02x", c);
                i++;
                continue;
            }
            sk_buf_append(b, p + i, k);
            i += k;
            continue;
        }
        i++;
    }
    sk_buf_putc(b, '"');
}

/* A NUL-terminated, valid UTF-8 copy for cJSON. */
static char *json_safe(sk_str s) {
    const unsigned char *p = (const unsigned char *)s.ptr;
    size_t n = (size_t)s.len;
    sk_buf b;
    sk_buf_init(&b);
    for (size_t i = 0; i < n;) {
        size_t k = p[i] ? utf8_seq(p + i, n - i) : 0;
        if (k == 0) {
            sk_buf_puts(&b, "\xEF\xBF\xBD");
            i++;
        } else {
            sk_buf_append(&b, p + i, k);
            i += k;
        }
    }
    return sk_buf_detach(&b);
}

/* Shortest text that reads back as the same float (or double). */
static void fmt_float(char *out, size_t cap, double v, int is_f32) {
    if (isnan(v)) { snprintf(out, cap, "nan"); return; }
    if (isinf(v)) { snprintf(out, cap, v < 0 ? "-inf" : "inf"); return; }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(out, cap, "%.*g", prec, v);
        if (is_f32 ? (strtof(out, NULL) == (float)v) : (strtod(out, NULL) == v)) break;
    }
    if (!strpbrk(out, ".eEn")) {
        size_t l = strlen(out);
        if (l + 3 < cap) memcpy(out + l, ".0", 3);
    }
}

static void text_scalar(sk_buf *b, const sk_gguf_value *v) {
    char tmp[64];
    switch (v->type) {
    case SK_GGUF_U8: case SK_GGUF_U16: case SK_GGUF_U32: case SK_GGUF_U64:
        sk_buf_printf(b, "%" PRIu64, v->v.u);
        break;
    case SK_GGUF_I8: case SK_GGUF_I16: case SK_GGUF_I32: case SK_GGUF_I64:
        sk_buf_printf(b, "%" PRId64, v->v.i);
        break;
    case SK_GGUF_BOOL: sk_buf_puts(b, v->v.u ? "true" : "false"); break;
    case SK_GGUF_F32: fmt_float(tmp, sizeof tmp, v->v.f, 1); sk_buf_puts(b, tmp); break;
    case SK_GGUF_F64: fmt_float(tmp, sizeof tmp, v->v.f, 0); sk_buf_puts(b, tmp); break;
    case SK_GGUF_STRING: text_str(b, v->v.s); break;
    default: break;
    }
}

static void text_array(sk_buf *b, const sk_gguf_value *arr, uint64_t max) {
    sk_gguf_iter it;
    sk_gguf_value el;
    sk_gguf_iter_init(&it, arr);
    sk_buf_putc(b, '[');
    uint64_t i = 0;
    while (i < max && sk_gguf_iter_next(&it, &el)) {
        if (i) sk_buf_puts(b, ", ");
        if (el.type == SK_GGUF_ARRAY) text_array(b, &el, max);
        else text_scalar(b, &el);
        i++;
    }
    if (arr->v.arr.count > i) sk_buf_puts(b, i ? ", ..." : "...");
    sk_buf_putc(b, ']');
}

/* A key or tensor name as plain text: valid UTF-8 was checked at open, but control
 * characters (newline, ESC, NUL) are escaped as \xNN so a name cannot forge lines or
 * drive the terminal. */
static void plain_name(sk_buf *b, sk_str s, size_t max_len) {
    size_t n = s.len < max_len ? (size_t)s.len : max_len;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s.ptr[i];
        if (c < 0x20 || c == 0x7f || c == '\\') sk_buf_printf(b, "\\x%02x", c);
        else sk_buf_putc(b, (char)c);
    }
    if (n < s.len) sk_buf_puts(b, "...");
}

static void type_label(sk_buf *b, const sk_gguf_value *v) {
    if (v->type != SK_GGUF_ARRAY) {
        sk_buf_puts(b, sk_gguf_value_type_name(v->type));
        return;
    }
    sk_buf_printf(b, "array[%s; %" PRIu64 "]", sk_gguf_value_type_name(v->v.arr.elem_type),
                  v->v.arr.count);
}

static void dims_text(char *out, size_t cap, const sk_gguf_tensor *t) {
    size_t k = 0;
    k += (size_t)snprintf(out + k, cap - k, "[");
    for (uint32_t d = 0; d < t->n_dims && k < cap; d++)
        k += (size_t)snprintf(out + k, cap - k, "%s%" PRIu64, d ? ", " : "", t->ne[d]);
    if (k < cap) snprintf(out + k, cap - k, "]");
}

static void type_text(char *out, size_t cap, uint32_t type) {
    const char *n = sk_ggml_type_name(type);
    if (n) snprintf(out, cap, "%s", n);
    else snprintf(out, cap, "other(%u)", type);
}

static void totals(const sk_gguf *g, uint64_t *params, uint64_t *bytes) {
    *params = 0;
    *bytes = 0;
    for (size_t i = 0; i < sk_gguf_n_tensors(g); i++) {
        const sk_gguf_tensor *t = sk_gguf_tensor_at(g, i);
        /* Each is bounded by the file (bytes) or by INT64_MAX per tensor (elements): the
         * sums saturate rather than wrap on a hostile table. */
        if (sk_add_u64(*params, t->n_elements, params)) *params = UINT64_MAX;
        if (sk_add_u64(*bytes, t->nbytes, bytes)) *bytes = UINT64_MAX;
    }
}

static int describe_text(const sk_gguf *g, const char *label, uint64_t max, sk_buf *b) {
    sk_buf_printf(b, "%s: GGUF v%u, %" PRIu64 " bytes, alignment %" PRIu64 "\n\n", label,
                  sk_gguf_version(g), sk_gguf_file_size(g), sk_gguf_alignment(g));
    size_t nkv = sk_gguf_n_kv(g);
    sk_buf_printf(b, "%zu metadata key%s:\n", nkv, nkv == 1 ? "" : "s");
    for (size_t i = 0; i < nkv; i++) {
        sk_str k = sk_gguf_kv_key(g, i);
        const sk_gguf_value *v = sk_gguf_kv_value(g, i);
        sk_buf_puts(b, "  ");
        plain_name(b, k, (size_t)-1);
        sk_buf_puts(b, " (");
        type_label(b, v);
        sk_buf_puts(b, ") = ");
        if (v->type == SK_GGUF_ARRAY) text_array(b, v, max);
        else text_scalar(b, v);
        sk_buf_putc(b, '\n');
    }
    size_t nt = sk_gguf_n_tensors(g);
    sk_buf_printf(b, "%zu tensor%s (ggml dims, ne[0] = innermost):\n", nt, nt == 1 ? "" : "s");
    char dims[128], ty[32];
    sk_buf nb;
    sk_buf_init(&nb);
    for (size_t i = 0; i < nt; i++) {
        const sk_gguf_tensor *t = sk_gguf_tensor_at(g, i);
        dims_text(dims, sizeof dims, t);
        type_text(ty, sizeof ty, t->type);
        nb.len = 0;
        plain_name(&nb, t->name, 400);
        sk_buf_putc(&nb, '\0');
        const char *name = nb.failed ? "?" : nb.data;
        if (sk_ggml_type_known(t->type))
            sk_buf_printf(b, "  %-40s %-22s %-6s %10" PRIu64 " bytes\n", name, dims, ty,
                          t->nbytes);
        else
            sk_buf_printf(b, "  %-40s %-22s %-6s %10s bytes\n", name, dims, ty, "?");
    }
    sk_buf_free(&nb);
    uint64_t p, by;
    totals(g, &p, &by);
    sk_buf_printf(b, "total: %" PRIu64 " parameters, %" PRIu64 " bytes of tensor data\n", p, by);
    return b->failed ? SKYCMD_E_NOMEM : SKYCMD_OK;
}

static cJSON *json_u64(uint64_t v) {
    char tmp[32];
    snprintf(tmp, sizeof tmp, "%" PRIu64, v);
    return cJSON_CreateRaw(tmp);
}
static cJSON *json_i64(int64_t v) {
    char tmp[32];
    snprintf(tmp, sizeof tmp, "%" PRId64, v);
    return cJSON_CreateRaw(tmp);
}

static cJSON *json_string(sk_str s) {
    char *c = json_safe(s);
    cJSON *j = c ? cJSON_CreateString(c) : NULL;
    free(c);
    return j;
}

static cJSON *json_scalar(const sk_gguf_value *v) {
    switch (v->type) {
    case SK_GGUF_U8: case SK_GGUF_U16: case SK_GGUF_U32: case SK_GGUF_U64: return json_u64(v->v.u);
    case SK_GGUF_I8: case SK_GGUF_I16: case SK_GGUF_I32: case SK_GGUF_I64: return json_i64(v->v.i);
    case SK_GGUF_BOOL: return cJSON_CreateBool(v->v.u != 0);
    case SK_GGUF_F32: case SK_GGUF_F64:
        if (!isfinite(v->v.f)) return cJSON_CreateNull();
        else {
            char tmp[64];
            fmt_float(tmp, sizeof tmp, v->v.f, v->type == SK_GGUF_F32);
            return cJSON_CreateRaw(tmp);
        }
    case SK_GGUF_STRING: return json_string(v->v.s);
    default: return cJSON_CreateNull();
    }
}

static cJSON *json_array(const sk_gguf_value *arr, uint64_t max) {
    cJSON *a = cJSON_CreateArray();
    if (!a) return NULL;
    sk_gguf_iter it;
    sk_gguf_value el;
    sk_gguf_iter_init(&it, arr);
    uint64_t i = 0;
    while (i < max && sk_gguf_iter_next(&it, &el)) {
        cJSON *x = el.type == SK_GGUF_ARRAY ? json_array(&el, max) : json_scalar(&el);
        if (!x || !cJSON_AddItemToArray(a, x)) {
            cJSON_Delete(x);
            cJSON_Delete(a);
            return NULL;
        }
        i++;
    }
    return a;
}

/* cJSON_Add*ToObject calls return NULL on failure; one flag collects them. */
static void add(cJSON *o, const char *k, cJSON *v, int *bad) {
    if (!v || !cJSON_AddItemToObject(o, k, v)) {
        cJSON_Delete(v);
        *bad = 1;
    }
}

static int describe_json(const sk_gguf *g, const char *label, uint64_t max, char **out) {
    int bad = 0;
    cJSON *root = cJSON_CreateObject();
    if (!root) return SKYCMD_E_NOMEM;
    add(root, "file", cJSON_CreateString(label), &bad);
    add(root, "version", json_u64(sk_gguf_version(g)), &bad);
    add(root, "size", json_u64(sk_gguf_file_size(g)), &bad);
    add(root, "alignment", json_u64(sk_gguf_alignment(g)), &bad);
    add(root, "data_offset", json_u64(sk_gguf_data_offset(g)), &bad);
    cJSON *md = cJSON_CreateArray();
    add(root, "metadata", md, &bad);
    for (size_t i = 0; md && i < sk_gguf_n_kv(g) && !bad; i++) {
        const sk_gguf_value *v = sk_gguf_kv_value(g, i);
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(md, o)) { cJSON_Delete(o); bad = 1; break; }
        add(o, "key", json_string(sk_gguf_kv_key(g, i)), &bad);
        add(o, "type", cJSON_CreateString(sk_gguf_value_type_name(v->type)), &bad);
        if (v->type == SK_GGUF_ARRAY) {
            add(o, "element_type", cJSON_CreateString(sk_gguf_value_type_name(v->v.arr.elem_type)), &bad);
            add(o, "count", json_u64(v->v.arr.count), &bad);
            add(o, "value", json_array(v, max), &bad);
            add(o, "truncated", cJSON_CreateBool(v->v.arr.count > max), &bad);
        } else {
            add(o, "value", json_scalar(v), &bad);
        }
    }
    cJSON *ts = cJSON_CreateArray();
    add(root, "tensors", ts, &bad);
    char ty[32];
    for (size_t i = 0; ts && i < sk_gguf_n_tensors(g) && !bad; i++) {
        const sk_gguf_tensor *t = sk_gguf_tensor_at(g, i);
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(ts, o)) { cJSON_Delete(o); bad = 1; break; }
        add(o, "name", json_string(t->name), &bad);
        cJSON *d = cJSON_CreateArray();
        add(o, "dims", d, &bad);
        for (uint32_t k = 0; d && k < t->n_dims; k++) {
            cJSON *x = json_u64(t->ne[k]);
            if (!x || !cJSON_AddItemToArray(d, x)) { cJSON_Delete(x); bad = 1; }
        }
        type_text(ty, sizeof ty, t->type);
        add(o, "type", cJSON_CreateString(ty), &bad);
        add(o, "type_id", json_u64(t->type), &bad);
        add(o, "offset", json_u64(t->offset), &bad);
        add(o, "parameters", json_u64(t->n_elements), &bad);
        add(o, "bytes", sk_ggml_type_known(t->type) ? json_u64(t->nbytes) : cJSON_CreateNull(), &bad);
    }
    uint64_t p, by;
    totals(g, &p, &by);
    add(root, "total_parameters", json_u64(p), &bad);
    add(root, "total_bytes", json_u64(by), &bad);
    char *s = bad ? NULL : cJSON_Print(root);
    cJSON_Delete(root);
    if (!s) return SKYCMD_E_NOMEM;
    /* cJSON's buffer comes from its allocator (malloc by default); hand out our own copy
     * with a trailing newline so that skycmd_string_free (free) is always right. */
    size_t n = strlen(s);
    char *r = malloc(n + 2);
    if (r) {
        memcpy(r, s, n);
        r[n] = '\n';
        r[n + 1] = '\0';
    }
    cJSON_free(s);
    if (!r) return SKYCMD_E_NOMEM;
    *out = r;
    return SKYCMD_OK;
}

int sk_gguf_describe(const sk_gguf *g, const char *label, uint64_t max_array, int json,
                     char **out, sk_err *e) {
    if (!g || !out) return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "describe: NULL argument");
    *out = NULL;
    if (!label) label = "<buffer>";
    int st;
    if (json) {
        st = describe_json(g, label, max_array, out);
    } else {
        sk_buf b;
        sk_buf_init(&b);
        st = describe_text(g, label, max_array, &b);
        if (!st) {
            *out = sk_buf_detach(&b);
            if (!*out) st = SKYCMD_E_NOMEM;
        } else {
            sk_buf_free(&b);
        }
    }
    if (st) return sk_fail(e, st, "describe %s: out of memory", label);
    return SKYCMD_OK;
}
