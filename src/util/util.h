/*
 * util.h - small internal helpers shared by every module: the error record that
 * internal calls fill, overflow-checked size arithmetic, a growable byte buffer, and
 * read-only file mapping. Nothing here is exported from the library.
 *
 * Contract: internal functions return an skycmd_status (0 = OK) and, on failure, describe
 * the problem in an sk_err given by the caller (which may be NULL). Messages name what is
 * wrong and where (file, key, offset).
 */
#ifndef SK_UTIL_H
#define SK_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "skycmd.h"

#define SK_ERR_MSG_MAX 512

typedef struct sk_err {
    int status;
    int sys_errno; /* the errno of a failed system call behind it (ENOENT, ...), else 0 */
    char msg[SK_ERR_MSG_MAX];
} sk_err;

#if defined(__GNUC__)
#define SK_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define SK_PRINTF(a, b)
#endif

/* Record a failure in e (if non-NULL) and return status, so that callers can write
 * `return sk_fail(e, SKYCMD_E_FORMAT, "...", ...);`. */
int sk_fail(sk_err *e, int status, const char *fmt, ...) SK_PRINTF(3, 4);
/* The same, for a failed system call: also records its errno (skycmd_error_errno() hands it
 * to the caller, so "no such file" stays recognisable). sk_fail records 0. */
int sk_fail_errno(sk_err *e, int status, int errnum, const char *fmt, ...) SK_PRINTF(4, 5);
/* Prefix an existing message with context: "file.gguf: <old message>". */
void sk_err_prefix(sk_err *e, const char *fmt, ...) SK_PRINTF(2, 3);
void sk_err_clear(sk_err *e);

/* Overflow-checked arithmetic: return 0 on success, -1 on overflow. */
static inline int sk_add_size(size_t a, size_t b, size_t *out) {
    if (a > SIZE_MAX - b) return -1;
    *out = a + b;
    return 0;
}
static inline int sk_mul_size(size_t a, size_t b, size_t *out) {
    if (a != 0 && b > SIZE_MAX / a) return -1;
    *out = a * b;
    return 0;
}
static inline int sk_add_u64(uint64_t a, uint64_t b, uint64_t *out) {
    if (a > UINT64_MAX - b) return -1;
    *out = a + b;
    return 0;
}
static inline int sk_mul_u64(uint64_t a, uint64_t b, uint64_t *out) {
    if (a != 0 && b > UINT64_MAX / a) return -1;
    *out = a * b;
    return 0;
}

/* 64-bit FNV-1a style hash of n bytes, for in-memory lookup tables only. The offset basis
 * is the one this code base has always used (1469598103934665603, not the published
 * 14695981039346656037): results are never stored or compared with other tools. */
static inline uint64_t sk_fnv1a64(const void *p, size_t n) {
    const unsigned char *b = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* Cuts of a text that split its tokenization exactly: encode(a + b) == encode(a) +
 * encode(b) for a cut between a and b. A tokenizer says which kinds hold for it
 * (sk_tokenizer_space_cut_safe(), a set of these bits); sk_prompt_state_ids_bounded()
 * cuts there. The two sides are defined here so that neither module reads the other.
 *  - SK_CUT_SPACE: just before an ASCII space that follows a printable ASCII byte;
 *  - SK_CUT_CLASS(a, b): between two printable ASCII bytes of different cut classes
 *    (sk_cut_class: letter, digit, other), class a before class b. These cut a "word"
 *    with no space in it (base64, a hash dump) where the pre-tokenizer splits it anyway. */
#define SK_CUT_SPACE 1u
#define SK_CUT_CLASS(a, b) (2u << (3 * (a) + (b)))
#define SK_CUT_CLASS_ALL (SK_CUT_CLASS(0, 1) | SK_CUT_CLASS(0, 2) | SK_CUT_CLASS(1, 0) | \
                          SK_CUT_CLASS(1, 2) | SK_CUT_CLASS(2, 0) | SK_CUT_CLASS(2, 1))

/* Every cut a tokenizer allows (sk_tokenizer_cut_rules()): the exact ones (cuts, SK_CUT_*
 * bits), and cuts inside a run of one cut class, which split the encoding exactly except
 * near the cut: for class c, run_margin[c] > 0 allows a cut between two bytes of class c
 * that follow at least run_margin[c] + run_min bytes of it; the tokens of the text before
 * the cut agree with the whole text's but for those within its last run_margin[c] bytes. */
/* The least a cut leaves on the side that is tokenized: a piece this long is longer than
 * any vocabulary entry a tokenizer that allows cuts has, so it is never looked up whole
 * (ignore_merges). */
#define SK_CUT_MIN_PIECE 1024u

typedef struct sk_run_merge {
    const char *left;          /* the left token's bytes (printable ASCII of the class) */
    uint32_t left_len, right_len;
    int same;                  /* the merge joins a token with itself ("0" "0") */
} sk_run_merge;

typedef struct sk_cut_rules {
    unsigned cuts;
    uint32_t run_margin[3];
    uint32_t run_min;
    /* Keeping the end (a list state), a run cut's margin depends on the text after it:
     * the merges making tokens of class c, in rank order (owned by the tokenizer). */
    const sk_run_merge *run_merges[3];
    size_t n_run_merges[3];
    /* How far from a run cut an added token's text could cover it (its longest such
     * pattern; included in run_margin): matches may differ there before any merge. */
    uint32_t run_edge[3];
    /* Pair cuts, exact like `cuts`: between two bytes x y of cut classes (sk_cut_class >= 0)
     * whose bit x * 128 + y is clear: no merge's result holds them side by side, so none
     * joins the two sides (sk_pair_cut_ok). NULL: none. (Owned by the tokenizer.) */
    const uint64_t *pair_join;
    /* Pair cuts only where the state's start is kept: the pipeline prepends a word marker
     * to a text not starting with a space (Metaspace), which a piece from the cut on is. */
    int pair_start_only;
} sk_cut_rules;

/* The cut class of a byte: 0 an ASCII letter, 1 an ASCII digit, 2 any other printable
 * ASCII byte but the apostrophe (which starts GPT-2's contractions), -1 anything else
 * (spaces, controls, the apostrophe, non-ASCII). */
static inline int sk_cut_class(unsigned char c) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return 0;
    if (c >= '0' && c <= '9') return 1;
    return c > 0x20 && c < 0x7F && c != '\'' ? 2 : -1;
}

/* 1 when `cuts` (SK_CUT_* bits) allow a cut of s just before s[k] (0 < k < its length). */
static inline int sk_cut_ok(unsigned cuts, const char *s, size_t k) {
    unsigned char a = (unsigned char)s[k - 1], b = (unsigned char)s[k];
    if (b == ' ') return (cuts & SK_CUT_SPACE) && a > 0x20 && a < 0x7F;
    int ca = sk_cut_class(a), cb = sk_cut_class(b);
    return ca >= 0 && cb >= 0 && ca != cb && (cuts & SK_CUT_CLASS(ca, cb)) != 0;
}

/* 1 when rules allow a pair cut of s just before s[k] (0 < k < its length). Never right
 * after an apostrophe's first letter: GPT-2's contractions ('re 've 'll) are one piece that
 * a cut there would change ("'r" is no contraction). */
static inline int sk_pair_cut_ok(const sk_cut_rules *r, const char *s, size_t k) {
    unsigned char x = (unsigned char)s[k - 1], y = (unsigned char)s[k];
    if (!r->pair_join || sk_cut_class(x) < 0 || sk_cut_class(y) < 0 || (k >= 2 && s[k - 2] == '\'')) return 0;
    unsigned bit = x * 128u + y;
    return !((r->pair_join[bit >> 6] >> (bit & 63)) & 1);
}

/* Allocation helpers: NULL on overflow or failure. sk_malloc_array(n, size). */
void *sk_malloc_array(size_t n, size_t size);
void *sk_calloc_array(size_t n, size_t size);
char *sk_strdup(const char *s);
char *sk_strndup(const char *s, size_t n);
/* Grow the array *p (capacity *cap elements of elem bytes) to hold at least need elements,
 * doubling, its contents kept (realloc); 0, or -1 on overflow or failure (*p unchanged). */
int sk_grow_array(void **p, size_t *cap, size_t need, size_t elem);

/* A growable byte buffer. On allocation failure `failed` is set and later appends are
 * no-ops, so a sequence of appends needs one check at the end. */
typedef struct sk_buf {
    char *data;
    size_t len;
    size_t cap;
    int failed;
} sk_buf;

void sk_buf_init(sk_buf *b);
void sk_buf_free(sk_buf *b);
int sk_buf_reserve(sk_buf *b, size_t extra);
void sk_buf_append(sk_buf *b, const void *data, size_t n);
void sk_buf_puts(sk_buf *b, const char *s);
void sk_buf_putc(sk_buf *b, char c);
void sk_buf_printf(sk_buf *b, const char *fmt, ...) SK_PRINTF(2, 3);
/* Give up ownership of a NUL-terminated copy of the contents (NULL if failed). */
char *sk_buf_detach(sk_buf *b);

/* A read-only mapping of a whole file (mmap; an empty file maps to a valid empty range). */
typedef struct sk_map {
    const uint8_t *data;
    size_t size;
    void *base_;   /* what to munmap */
    size_t mapped_;
} sk_map;

int sk_map_file(const char *path, sk_map *m, sk_err *e);
void sk_unmap(sk_map *m);

/* Progress of a long call (skycmd_progress_fn) over however many phases its work has: the
 * caller sees one sequence. A call makes an sk_progress on its options' callback and hands
 * shares of it down (sk_share: [lo, hi] of the whole); each callee splits its share further
 * by its own estimate of its parts' cost. Reporting fraction f of a share calls the callback
 * with done = (lo + f (hi - lo)) * SK_PROGRESS_TOTAL and total = SK_PROGRESS_TOTAL, done
 * never going back (a report below the last one repeats it). A non-zero return stops the
 * work: the report returns SKYCMD_E_CANCELLED ("cancelled by the progress callback"), and
 * so does every later one without calling the callback again. Without a callback (fn NULL,
 * or the share SK_SHARE_NONE) a report is one test and returns 0: no cost to the work.
 * Single-threaded: one thread reports at a time. */
#define SK_PROGRESS_TOTAL 1000000u
typedef struct sk_progress {
    skycmd_progress_fn fn;
    void *ud;
    uint64_t last;   /* the last done reported */
    int stopped;     /* the callback asked to stop */
} sk_progress;

typedef struct sk_share {
    sk_progress *p;  /* NULL: no progress wanted */
    double lo, hi;   /* of the whole, in [0, 1] */
} sk_share;

#define SK_SHARE_NONE ((sk_share){NULL, 0.0, 0.0})

static inline sk_share sk_share_whole(sk_progress *p) {
    sk_share s = {p, 0.0, 1.0};
    return s;
}
/* The part [a, b] (fractions of s, 0 <= a <= b <= 1) of a share. */
static inline sk_share sk_share_part(sk_share s, double a, double b) {
    sk_share r = {s.p, s.lo + a * (s.hi - s.lo), s.lo + b * (s.hi - s.lo)};
    return r;
}
static inline int sk_share_active(sk_share s) { return s.p && s.p->fn; }
int sk_share_report_(sk_share s, double f, sk_err *e);
/* Report that fraction f (clamped to [0, 1]) of the share is done: 0, or SKYCMD_E_CANCELLED
 * (with its message in e) when the callback asked to stop, now or before. */
static inline int sk_share_report(sk_share s, double f, sk_err *e) {
    return sk_share_active(s) ? sk_share_report_(s, f, e) : 0;
}

/* A whole regular file read with read() into memory the process owns (private anonymous
 * pages, page-aligned), so that a later change of the file (written over in place,
 * truncated) never reaches the copy: no SIGBUS, no bytes from two versions.
 * sk_file_copy_read() first waits (up to about 2 s) for the file to have no writer and holds a
 * read guard while it reads (sk_platform_read_guard_begin: a Linux read lease), so a writer's
 * open waits for the reading to end and a reading a writer broke is known. Besides, it takes
 * the file's identity (device, inode, size, mtime and ctime in ns) with fstat before and after
 * reading, checks the end of file is where it was and stats the path again; without a guard
 * (macOS; another user's file; NFS) it also compares 65 pages spread over the file with the
 * copy. A difference means a writer was at work, and the file is read again; three times in
 * a row: SKYCMD_E_IO, "the model file changed while it was being read". (Unguarded, a writer
 * paused in the middle of an in-place rewrite leaves a file that is a mix on disk, which no
 * reader can tell from a whole one.) keep_fd keeps the descriptor open for
 * sk_file_copy_refill(). With a progress share, the file is read in chunks of 8 MiB, each
 * reported (the bytes read of the size), and a stop between two chunks frees everything and
 * returns SKYCMD_E_CANCELLED; a second reading does not report again what the first did. */
typedef struct sk_file_copy {
    uint8_t *data;     /* size bytes (an empty file: a valid empty range) */
    size_t size;
    size_t mapped_;    /* bytes of anonymous memory, 0 when none */
    int fd;            /* -1 unless keep_fd */
    uint64_t id_[7];   /* dev, ino, size, mtime s/ns, ctime s/ns at the reading */
} sk_file_copy;

int sk_file_copy_read(const char *path, int keep_fd, sk_share prog, sk_file_copy *f, sk_err *e);
void sk_file_copy_free(sk_file_copy *f);
/* Give back the whole pages inside [p, p + n) of the copy (destructive: they read as zeros
 * until refilled); *off and *len get the byte range dropped (len 0 when no whole page). */
void sk_file_copy_drop(sk_file_copy *f, const void *p, size_t n, size_t *off, size_t *len);
/* Read [off, off + len) of the copy back from the kept descriptor: 0 when the file is still
 * the one read (same identity before and after), -1 otherwise (the range is then filled
 * with 0xff bytes: NaN in every float type, so a model made of it is refused at load). */
int sk_file_copy_refill(sk_file_copy *f, size_t off, size_t len);

/* Read a whole (small) file into a NUL-terminated malloc'ed buffer. */
int sk_read_file(const char *path, char **out, size_t *len, size_t max_len, sk_err *e);

/* What an output path names, once the symbolic links at its last component are followed
 * (sk_output_resolve). Every file the library writes goes through it, so that an output
 * never destroys what is not ours:
 *   absent, regular   created / replaced by a temporary file beside it and a rename;
 *   character device,
 *   FIFO              written in place, as a stream (/dev/null, /dev/full, /dev/stdout on a
 *                     pipe, a named pipe read by another program): renaming over them would
 *                     replace the device node or the pipe with a regular file; a FIFO's
 *                     reader is waited for (a signal ends the wait: SKYCMD_E_CANCELLED);
 *                     a terminal is refused (a binary file is no use there);
 *   block device      refused: a model is not a disk image, writing it over a disk or a
 *                     partition destroys what is there (and leaves its old tail behind);
 *   socket            refused: a socket cannot be opened as a file;
 *   directory         refused by the file writers (the Laya directory writer takes an
 *                     absent path or an empty directory).
 * A symbolic link is followed as `cp` follows it: the output goes to its target (the
 * temporary file beside the target, renamed over the target), and the link stays a link;
 * a dangling link gets its target created, when the target's directory exists. */
typedef enum sk_out_kind {
    SK_OUT_ABSENT = 0,
    SK_OUT_REGULAR,
    SK_OUT_DIR,
    SK_OUT_CHAR,
    SK_OUT_FIFO,
    SK_OUT_BLOCK,
    SK_OUT_SOCKET,
    SK_OUT_OTHER
} sk_out_kind;

/* Find what path names: *kind, and in *target (malloc'ed) the name to write or rename
 * over: path itself, or where its chain of symbolic links ends (for a device or a FIFO
 * reached through links, path itself: opening it follows them, even /proc's). Fails on
 * a loop of links, a component that is not a directory, or a path that cannot be read;
 * does not judge the kind (sk_output_refusal does). */
int sk_output_resolve(const char *path, char **target, sk_out_kind *kind, sk_err *e);
/* The reason a file output of this kind is refused ("is a directory", ...), NULL when it
 * is written (absent, regular, character device, FIFO). */
const char *sk_output_refusal(sk_out_kind kind);
/* "a regular file", "a directory", "a character device", ... ("nothing" when absent). */
const char *sk_output_kind_name(sk_out_kind kind);

/* Write `data` to an output path (the kinds above): to a regular file or an absent path
 * atomically, a temporary file beside it (or beside a symlink's target), fsync'ed and
 * renamed, so that a failure leaves no partial output; to a character device or a FIFO in
 * place, as a stream (a failure there cannot be taken back: the status says so). The
 * temporary name is `<path>.skycmd-partial.` plus 12 random hex digits (unguessable, and
 * recognisable when a killed process leaves it behind); it is created with
 * O_EXCL|O_NOFOLLOW, so a name planted in advance (a symlink to another file) is never
 * followed. An existing regular file's permission bits are kept. */
typedef struct sk_atomic_file {
    char *final_path; /* what is renamed over (or opened, for a stream) */
    char *tmp_path;   /* NULL for a stream */
    char *shown;      /* the path as the caller gave it, for messages */
    void *fp;         /* FILE * */
    int stream;       /* 1: a device or a FIFO, written in place */
} sk_atomic_file;

/* The index of the first NaN or infinity in x[0..n), or n when every value is finite
 * (convert and quantize refuse such weights, naming the tensor and the element). */
size_t sk_first_nonfinite(const float *x, size_t n);

/* The suffix every temporary output carries (files and the random-model directories). */
#define SK_PARTIAL_SUFFIX ".skycmd-partial."
/* Fill hex[0..12] with 12 random hex digits and a NUL (from /dev/urandom; the clock and the
 * process id where it cannot be read: O_EXCL still protects, only guessing gets easier). */
void sk_random_hex12(char hex[13]);
/* Create a fresh temporary name `<base>.skycmd-partial.<hex>` with make(name, ud) (which
 * returns 0 on success, or -1 with errno: EEXIST retries with another name); the name is
 * malloc'ed into *out. -1 with errno on failure. */
int sk_partial_create(const char *base, int (*make)(const char *name, void *ud), void *ud,
                      char **out);
int sk_atomic_open(sk_atomic_file *f, const char *path, sk_err *e);
int sk_atomic_write(sk_atomic_file *f, const void *data, size_t n, sk_err *e);
/* Commit (rename into place) when status == 0, else remove the temporary file (a stream is
 * flushed and closed). Returns the final status. */
int sk_atomic_close(sk_atomic_file *f, int status, sk_err *e);


/* Validate UTF-8 (strict: no overlongs, surrogates or values past U+10FFFF). */
int sk_utf8_valid(const char *s, size_t n);
/* The length of s's longest prefix with no byte a JSON string must escape ('"', '\\', a
 * control byte below 0x20), read eight bytes at a time. */
size_t sk_json_plain_len(const char *s, size_t n);

#endif /* SK_UTIL_H */
