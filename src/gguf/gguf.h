/*
 * gguf.h - GGUF container: a zero-copy reader for versions 2 and 3, a version-3 writer,
 * and ggml element-type conversions (F32, F16, BF16, Q8_0).
 *
 * Contract:
 *  - The reader never copies tensor data: sk_gguf_tensor.data points into the reader's own
 *    copy of the file (sk_gguf_open_file: read with read(), never mapped, so the file may
 *    be rewritten or truncated afterwards without effect; a change while it is read is
 *    detected and the open retried once, then refused with SKYCMD_E_IO) or into the
 *    caller's buffer, which must outlive the reader. Strings (sk_str) also point into the
 *    bytes and are NOT NUL-terminated.
 *  - Every count, length, offset and product read from the file is checked against the
 *    file size and for overflow; a damaged file yields SKYCMD_E_FORMAT with a message that
 *    names the section, item and byte offset. Nothing aborts.
 *  - Dimensions are kept in ggml order (ne[0] innermost). A PyTorch [rows, cols] matrix is
 *    ne = {cols, rows}.
 *  - Unknown tensor types are kept (type_size 0, nbytes unknown => other(N)) so a file can
 *    still be inspected; only known types are bounds-checked for their byte size.
 *  - The writer always writes general.alignment, pads every tensor and refuses Q8_0 tensors
 *    whose rows (ne[0]) are not a multiple of 32.
 *  - The reader also refuses (SKYCMD_E_FORMAT): duplicate keys or tensor names, keys and
 *    tensor names that are empty or not UTF-8, n_dims outside 1..4, zero or >= 2^63 dims,
 *    bool values other than 0/1, general.alignment that is not a u32 power of two, tensor
 *    offsets not a multiple of the alignment, data past the end of the file, overlapping
 *    tensors, arrays nested deeper than 8, versions other than 2 and 3.
 */
#ifndef SK_GGUF_H
#define SK_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "../numeric/numeric.h"
#include "../util/util.h"

/* ggml type ids (same numbering as ggml). */
enum {
    SK_GGML_F32 = 0,
    SK_GGML_F16 = 1,
    SK_GGML_Q8_0 = 8,
    SK_GGML_BF16 = 30
};
/* SK_QK8_0 and SK_Q8_0_BLOCK_BYTES, the Q8_0 block shape: src/numeric/numeric.h. */

/* GGUF metadata value types. */
enum {
    SK_GGUF_U8 = 0, SK_GGUF_I8 = 1, SK_GGUF_U16 = 2, SK_GGUF_I16 = 3,
    SK_GGUF_U32 = 4, SK_GGUF_I32 = 5, SK_GGUF_F32 = 6, SK_GGUF_BOOL = 7,
    SK_GGUF_STRING = 8, SK_GGUF_ARRAY = 9, SK_GGUF_U64 = 10, SK_GGUF_I64 = 11,
    SK_GGUF_F64 = 12
};
#define SK_GGUF_DEFAULT_ALIGNMENT 32

typedef struct sk_str {
    const char *ptr;
    uint64_t len;
} sk_str;

/* A metadata value as it sits in the file. Scalars are decoded; strings are borrowed;
 * arrays keep their element type, count and the position of their first element. */
typedef struct sk_gguf_value {
    uint32_t type;
    union {
        uint64_t u;   /* U8..U64 and BOOL */
        int64_t i;    /* I8..I64 */
        double f;     /* F32, F64 */
        sk_str s;     /* STRING */
        struct {
            uint32_t elem_type;
            uint64_t count;
            const uint8_t *first; /* bytes of element 0 */
            const uint8_t *end;   /* one past the last element's bytes */
        } arr;
    } v;
} sk_gguf_value;

typedef struct sk_gguf_tensor {
    sk_str name;
    uint32_t n_dims;
    uint64_t ne[4];       /* ggml order; unused dims are 1 */
    uint32_t type;        /* ggml type id */
    uint64_t offset;      /* relative to the data section */
    uint64_t n_elements;
    uint64_t nbytes;      /* 0 when the type is unknown */
    const uint8_t *data;  /* borrowed; NULL when nbytes is unknown */
} sk_gguf_tensor;

typedef struct sk_gguf sk_gguf;

int sk_gguf_open_file(const char *path, sk_gguf **out, sk_err *e);
/* SK_GGUF_RELEASABLE: the one user of the reader (a model that loads from it once) may give
 * the copy's pages back with sk_gguf_release_pages(); the file stays open for
 * sk_gguf_bytes(). */
#define SK_GGUF_RELEASABLE 1
int sk_gguf_open_file_ex(const char *path, int flags, sk_gguf **out, sk_err *e);
/* The same, reporting the bytes read to prog (sk_file_copy_read in util.h); a stop of its
 * callback between two chunks returns SKYCMD_E_CANCELLED with nothing left allocated. */
int sk_gguf_open_file_progress(const char *path, int flags, sk_share prog, sk_gguf **out,
                               sk_err *e);
/* Borrow `data` (must outlive the reader). */
int sk_gguf_open_buffer(const void *data, size_t size, sk_gguf **out, sk_err *e);
/* The same; flags SK_GGUF_RELEASABLE: `data` is the caller's own heap or page memory (not a
 * file mapping, not someone else's buffer) that the reader's one user may give back page by
 * page with sk_gguf_release_pages() (a model built in memory from a Laya directory): those
 * bytes are then undefined (zeros on Linux) and sk_gguf_bytes() does not bring them back. */
int sk_gguf_open_buffer_ex(void *data, size_t size, int flags, sk_gguf **out, sk_err *e);
void sk_gguf_close(sk_gguf *g);
/* Give the whole pages inside [p, p + n) (inside the reader's data, bytes that the caller has
 * copied and will not read again through the reader) back to the system, when the reader
 * was opened with SK_GGUF_RELEASABLE: they then read as zeros (only sk_gguf_bytes() brings
 * them back, from the file; for a buffer opened with sk_gguf_open_buffer_ex nothing does).
 * A no-op otherwise, and always for a caller's borrowed buffer, whose memory a release
 * would zero. Not thread-safe (a loader's call). */
void sk_gguf_release_pages(const sk_gguf *g, const void *p, size_t n);

uint32_t sk_gguf_version(const sk_gguf *g);
uint64_t sk_gguf_file_size(const sk_gguf *g);
uint64_t sk_gguf_alignment(const sk_gguf *g);
uint64_t sk_gguf_data_offset(const sk_gguf *g);  /* start of the tensor data section */
/* The whole file. Pages given back by sk_gguf_release_pages() are read back from the file
 * first (0xff bytes, NaN in every float type, if it changed since it was read). */
const uint8_t *sk_gguf_bytes(const sk_gguf *g);

size_t sk_gguf_n_kv(const sk_gguf *g);
sk_str sk_gguf_kv_key(const sk_gguf *g, size_t i);
const sk_gguf_value *sk_gguf_kv_value(const sk_gguf *g, size_t i);
/* Index of a key, or -1. */
int64_t sk_gguf_find_key(const sk_gguf *g, const char *key);

/* Typed getters: SKYCMD_OK, SKYCMD_E_NOT_FOUND if absent, SKYCMD_E_FORMAT if the value
 * has another type (integer getters accept any integer type whose value fits). */
int sk_gguf_get_u32(const sk_gguf *g, const char *key, uint32_t *out);
int sk_gguf_get_u64(const sk_gguf *g, const char *key, uint64_t *out);
int sk_gguf_get_i64(const sk_gguf *g, const char *key, int64_t *out);
int sk_gguf_get_f32(const sk_gguf *g, const char *key, float *out);
int sk_gguf_get_bool(const sk_gguf *g, const char *key, int *out);
int sk_gguf_get_str(const sk_gguf *g, const char *key, sk_str *out);
int sk_gguf_get_arr(const sk_gguf *g, const char *key, const sk_gguf_value **out);

/* Sequential access to array elements (element types of fixed size are O(1); strings and
 * nested arrays need the iterator). */
typedef struct sk_gguf_iter {
    const sk_gguf_value *arr;
    const uint8_t *p;
    uint64_t index;
} sk_gguf_iter;
void sk_gguf_iter_init(sk_gguf_iter *it, const sk_gguf_value *arr);
/* Next element into *out (strings borrowed; nested arrays as ARRAY values). Returns 1,
 * or 0 at the end. The reader validated every element at open, so this cannot fail. */
int sk_gguf_iter_next(sk_gguf_iter *it, sk_gguf_value *out);

size_t sk_gguf_n_tensors(const sk_gguf *g);
const sk_gguf_tensor *sk_gguf_tensor_at(const sk_gguf *g, size_t i);
const sk_gguf_tensor *sk_gguf_find_tensor(const sk_gguf *g, const char *name);

/* PyTorch order (outermost first) of a tensor's dims into shape[0..n_dims-1]; the rest
 * are 1. Returns n_dims. */
uint32_t sk_gguf_tensor_shape(const sk_gguf_tensor *t, uint64_t shape[4]);
/* "u8", "string", "array", ... ("unknown" outside the enum). */
const char *sk_gguf_value_type_name(uint32_t type);
/* Bytes of one element of a fixed-size value type; 0 for STRING, ARRAY and unknown types. */
size_t sk_gguf_value_type_size(uint32_t type);

/* The `skycmd inspect` description of an open file (gguf_describe.c): text like the book's
 * gguf-inspect, or one JSON document when json != 0. Arrays show at most max_array items.
 * *out is malloc'ed and NUL-terminated. `label` names the file in the first line. */
int sk_gguf_describe(const sk_gguf *g, const char *label, uint64_t max_array, int json,
                     char **out, sk_err *e);

/* Compare an sk_str to a C string. */
int sk_str_eq(sk_str s, const char *c);

/* ---- element types ---- */
const char *sk_ggml_type_name(uint32_t type);  /* "F32", ... or NULL when unknown */
/* Bytes for n elements of a row (n must be a multiple of the block size); 0 if unknown
 * type or n not a multiple of the block. */
uint64_t sk_ggml_row_size(uint32_t type, uint64_t n);
int sk_ggml_type_known(uint32_t type);
uint64_t sk_ggml_block_size(uint32_t type);  /* 1, or 32 for Q8_0 */

/* sk_f32_to_f16, sk_f16_to_f32, sk_f32_to_bf16, sk_bf16_to_f32: src/numeric/numeric.h. */
/* n must be a multiple of 32; exactly ggml's quantize_row_q8_0_ref bytes. */
void sk_quantize_q8_0(const float *x, uint8_t *out, size_t n);
void sk_dequantize_q8_0(const uint8_t *in, float *y, size_t n);
/* Convert n elements of a known type to f32 / from f32 (dst sized by sk_ggml_row_size). */
int sk_ggml_to_f32(uint32_t type, const void *src, float *dst, size_t n);
int sk_ggml_from_f32(uint32_t type, const float *src, void *dst, size_t n);

/* ---- writer ---- */
typedef struct sk_gguf_writer sk_gguf_writer;

sk_gguf_writer *sk_gguf_writer_new(uint32_t alignment);  /* 0 = 32 */
void sk_gguf_writer_free(sk_gguf_writer *w);
/* Keys are copied. Adding a key twice replaces nothing: it is an error (SKYCMD_E_INVALID_ARGUMENT). */
int sk_gguf_writer_add_u32(sk_gguf_writer *w, const char *key, uint32_t v);
int sk_gguf_writer_add_i32(sk_gguf_writer *w, const char *key, int32_t v);
int sk_gguf_writer_add_u64(sk_gguf_writer *w, const char *key, uint64_t v);
int sk_gguf_writer_add_f32(sk_gguf_writer *w, const char *key, float v);
int sk_gguf_writer_add_bool(sk_gguf_writer *w, const char *key, int v);
int sk_gguf_writer_add_str(sk_gguf_writer *w, const char *key, const char *v);
int sk_gguf_writer_add_str_n(sk_gguf_writer *w, const char *key, const char *v, size_t n);
/* Arrays of fixed-size elements (U8..F64, BOOL): `data` holds count little-endian elements. */
int sk_gguf_writer_add_arr(sk_gguf_writer *w, const char *key, uint32_t elem_type,
                           const void *data, uint64_t count);
int sk_gguf_writer_add_arr_str(sk_gguf_writer *w, const char *key, const char *const *v,
                               uint64_t count);
/* Copy any metadata value from a reader (used by quantize to keep every key). */
int sk_gguf_writer_add_value(sk_gguf_writer *w, sk_str key, const sk_gguf_value *v);
/* Tensor: ne in ggml order. With copy = 0 `data` is borrowed until write; otherwise copied. */
int sk_gguf_writer_add_tensor(sk_gguf_writer *w, const char *name, uint32_t n_dims,
                              const uint64_t *ne, uint32_t type, const void *data,
                              uint64_t nbytes, int copy, sk_err *e);
/* Write version 3 atomically (no partial output on failure). progress(done, total) counts
 * tensor bytes; non-zero return cancels with SKYCMD_E_CANCELLED. */
int sk_gguf_writer_write(sk_gguf_writer *w, const char *path, skycmd_progress_fn progress,
                         void *user_data, sk_err *e);
/* Write to memory (tests, fuzz seeds). *out for free(). */
int sk_gguf_writer_write_mem(sk_gguf_writer *w, uint8_t **out, size_t *size, sk_err *e);

#endif /* SK_GGUF_H */
