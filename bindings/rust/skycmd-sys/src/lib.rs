//! Raw FFI declarations of libskycmd's public C ABI (`include/skycmd.h`), written by hand.
//!
//! `tests/header.rs` checks every declaration and constant here against the header: it
//! compiles a C file of `__builtin_types_compatible_p` assertions generated from this file,
//! and checks that every `SKYCMD_API` function of the header is declared here. Keep one
//! declaration per line (the check parses this file).
//!
//! Everything is `unsafe`; use the `skycmd` crate for a safe API.
#![allow(non_camel_case_types)]

// std::os::raw, not core::ffi (1.64): the crates build with rustc 1.63 (Debian bookworm).
use std::marker::{PhantomData, PhantomPinned};
use std::os::raw::{c_char, c_int, c_uint, c_void};

macro_rules! opaque {
    ($($name:ident),*) => {$(
        #[repr(C)]
        pub struct $name {
            _data: [u8; 0],
            _marker: PhantomData<(*mut u8, PhantomPinned)>,
        }
    )*};
}
opaque!(skycmd_error, skycmd_options, skycmd_model, skycmd_tokenizer, skycmd_session, skycmd_request, skycmd_response);

pub const SKYCMD_VERSION_MAJOR: c_uint = 0;
pub const SKYCMD_VERSION_MINOR: c_uint = 1;
pub const SKYCMD_VERSION_PATCH: c_uint = 0;
pub const SKYCMD_VERSION_NUMBER: c_uint = 100;
pub const SKYCMD_ABI_VERSION: c_uint = 1;

pub const SKYCMD_OK: c_int = 0;
pub const SKYCMD_E_INVALID_ARGUMENT: c_int = 1;
pub const SKYCMD_E_MISUSE: c_int = 2;
pub const SKYCMD_E_NOMEM: c_int = 3;
pub const SKYCMD_E_IO: c_int = 4;
pub const SKYCMD_E_FORMAT: c_int = 5;
pub const SKYCMD_E_UNSUPPORTED: c_int = 6;
pub const SKYCMD_E_BUSY: c_int = 7;
pub const SKYCMD_E_JSON: c_int = 8;
pub const SKYCMD_E_REQUEST: c_int = 9;
pub const SKYCMD_E_TOO_LARGE: c_int = 10;
pub const SKYCMD_E_VERSION: c_int = 11;
pub const SKYCMD_E_NOT_FOUND: c_int = 12;
pub const SKYCMD_E_INTERNAL: c_int = 13;
pub const SKYCMD_E_CANCELLED: c_int = 14;
pub const SKYCMD_STATUS_COUNT: c_int = 15;

pub const SKYCMD_OPT_THREADS: c_int = 1;
pub const SKYCMD_OPT_WEIGHTS: c_int = 2;
pub const SKYCMD_OPT_ACTIVATIONS: c_int = 3;
pub const SKYCMD_OPT_TYPE: c_int = 4;
pub const SKYCMD_OPT_HEAD_TYPE: c_int = 5;
pub const SKYCMD_OPT_SEED: c_int = 6;
pub const SKYCMD_OPT_MASSIVE: c_int = 7;
pub const SKYCMD_OPT_MAX_ARRAY: c_int = 8;
pub const SKYCMD_OPT_JSON: c_int = 9;
pub const SKYCMD_OPT_MAX_TOKENS: c_int = 10;
pub const SKYCMD_OPT_LAYOUT: c_int = 11;
pub const SKYCMD_OPT_LONG: c_int = 12;
pub const SKYCMD_OPT_WINDOW: c_int = 13;
pub const SKYCMD_OPT_STRIDE: c_int = 14;
pub const SKYCMD_OPT_REPORT_TRUNCATION: c_int = 15;
pub const SKYCMD_OPT_MAX_LEN: c_int = 16;
pub const SKYCMD_OPT_HEAD_MAX_LEN: c_int = 17;
pub const SKYCMD_OPT_TOURNAMENT_GROUP: c_int = 20;
pub const SKYCMD_OPT_CALIB_ABSTENTION: c_int = 22;
pub const SKYCMD_OPT_CALIB_ABSTAIN_MIN_N: c_int = 23;
pub const SKYCMD_OPT_CALIB_CONSERVATIVE: c_int = 24;
pub const SKYCMD_OPT_MAX_TOKEN_BUDGET: c_int = 25;
pub const SKYCMD_OPT_AUTO_TOURNAMENT_GROUP: c_int = 26;
pub const SKYCMD_OPT_NAME: c_int = 100;
pub const SKYCMD_OPT_PRE: c_int = 101;
pub const SKYCMD_OPT_MODEL_NAME: c_int = 102;
pub const SKYCMD_OPT_MIN_CONFIDENCE: c_int = 105;
pub const SKYCMD_OPT_CALIB_TARGET_ERROR: c_int = 106;

pub const SKYCMD_TYPE_F32: c_int = 0;
pub const SKYCMD_TYPE_F16: c_int = 1;
pub const SKYCMD_TYPE_Q8_0: c_int = 8;
pub const SKYCMD_TYPE_BF16: c_int = 30;

pub const SKYCMD_WEIGHTS_F32: c_int = 0;
pub const SKYCMD_WEIGHTS_Q8: c_int = 1;
pub const SKYCMD_WEIGHTS_Q8_PLAIN: c_int = 2;
pub const SKYCMD_WEIGHTS_BF16X3: c_int = 3;
pub const SKYCMD_WEIGHTS_Q8_ROW: c_int = 4;

pub const SKYCMD_ACT_Q8X2: c_int = 0;
pub const SKYCMD_ACT_Q8: c_int = 1;

pub const SKYCMD_LAYOUT_GGUF: c_int = 0;
pub const SKYCMD_LAYOUT_LAYA: c_int = 1;

pub const SKYCMD_SPECIAL_CLS: c_int = 0;
pub const SKYCMD_SPECIAL_SEP: c_int = 1;
pub const SKYCMD_SPECIAL_MASK: c_int = 2;
pub const SKYCMD_SPECIAL_PAD: c_int = 3;
pub const SKYCMD_SPECIAL_UNK: c_int = 4;

pub const SKYCMD_QTYPE_CHOICE: c_int = 0;
pub const SKYCMD_QTYPE_SCORE: c_int = 1;
pub const SKYCMD_QTYPE_NOUL: c_int = 2;

pub const SKYCMD_ABSTENTION_NONE: c_int = 0;
pub const SKYCMD_ABSTENTION_PASSED: c_int = 1;
pub const SKYCMD_ABSTENTION_ABSTAINED: c_int = 2;
pub const SKYCMD_ABSTENTION_UNEVALUATED: c_int = 3;

/// Progress of long work; return non-zero to cancel.
pub type skycmd_progress_fn = Option<unsafe extern "C" fn(user_data: *mut c_void, done: u64, total: u64) -> c_int>;
/// Log events (level 0 debug, 1 info, 2 warning); the message lives during the call only.
pub type skycmd_log_fn = Option<unsafe extern "C" fn(user_data: *mut c_void, level: c_int, message: *const c_char)>;

extern "C" {
    pub fn skycmd_version_number() -> c_uint;
    pub fn skycmd_version_string() -> *const c_char;
    pub fn skycmd_abi_version() -> c_uint;
    pub fn skycmd_build_id() -> *const c_char;
    pub fn skycmd_cpu_features() -> *const c_char;
    pub fn skycmd_kernels() -> *const c_char;
    pub fn skycmd_check_version(header_version_number: c_uint, err: *mut skycmd_error) -> c_int;
    pub fn skycmd_status_name(status: c_int) -> *const c_char;
    pub fn skycmd_strerror(status: c_int) -> *const c_char;

    pub fn skycmd_error_new() -> *mut skycmd_error;
    pub fn skycmd_error_free(err: *mut skycmd_error);
    pub fn skycmd_error_status(err: *const skycmd_error) -> c_int;
    pub fn skycmd_error_message(err: *const skycmd_error) -> *const c_char;
    pub fn skycmd_error_clear(err: *mut skycmd_error);
    pub fn skycmd_error_errno(err: *const skycmd_error) -> c_int;
    pub fn skycmd_string_free(s: *mut c_char);

    pub fn skycmd_options_new() -> *mut skycmd_options;
    pub fn skycmd_options_free(opts: *mut skycmd_options);
    pub fn skycmd_options_set_int(opts: *mut skycmd_options, option: c_int, value: i64) -> c_int;
    pub fn skycmd_options_set_string(opts: *mut skycmd_options, option: c_int, value: *const c_char) -> c_int;
    pub fn skycmd_options_get_int(opts: *const skycmd_options, option: c_int, value: *mut i64) -> c_int;
    pub fn skycmd_options_set_progress(opts: *mut skycmd_options, f: skycmd_progress_fn, user_data: *mut c_void) -> c_int;
    pub fn skycmd_options_set_log(opts: *mut skycmd_options, f: skycmd_log_fn, user_data: *mut c_void) -> c_int;
    pub fn skycmd_option_bounds(option: c_int, min_value: *mut i64, max_value: *mut i64) -> c_int;

    pub fn skycmd_inspect(gguf_path: *const c_char, opts: *const skycmd_options, out: *mut *mut c_char, err: *mut skycmd_error) -> c_int;
    pub fn skycmd_convert(laya_dir: *const c_char, out_path: *const c_char, opts: *const skycmd_options, err: *mut skycmd_error) -> c_int;
    pub fn skycmd_random_model(preset: *const c_char, out_path: *const c_char, opts: *const skycmd_options, err: *mut skycmd_error) -> c_int;
    pub fn skycmd_quantize(in_path: *const c_char, out_path: *const c_char, opts: *const skycmd_options, err: *mut skycmd_error) -> c_int;

    pub fn skycmd_packed_fixture(kind: c_int, kernel_order: c_int, bytes: *mut *const u8, n_bytes: *mut usize, rows: *mut i64, cols: *mut i64) -> c_int;
    pub fn skycmd_packed_disagreement(kind: c_int, bytes: *const c_void, n_bytes: usize, rows: i64, cols: i64, kernel_order: c_int, message: *mut *mut c_char) -> c_int;

    pub fn skycmd_model_open(gguf_path: *const c_char, opts: *const skycmd_options, out: *mut *mut skycmd_model, err: *mut skycmd_error) -> c_int;
    pub fn skycmd_default_model_path(out: *mut *mut c_char, err: *mut skycmd_error) -> c_int;
    pub fn skycmd_model_open_buffer(data: *const c_void, size: usize, opts: *const skycmd_options, out: *mut *mut skycmd_model, err: *mut skycmd_error) -> c_int;
    pub fn skycmd_model_free(model: *mut skycmd_model) -> c_int;
    pub fn skycmd_model_name(model: *const skycmd_model) -> *const c_char;
    pub fn skycmd_model_tokenizer(model: *const skycmd_model) -> *const skycmd_tokenizer;
    pub fn skycmd_model_get_int(model: *const skycmd_model, name: *const c_char, value: *mut i64) -> c_int;

    pub fn skycmd_tokenizer_open_json(tokenizer_json_path: *const c_char, out: *mut *mut skycmd_tokenizer, err: *mut skycmd_error) -> c_int;
    pub fn skycmd_tokenizer_free(tok: *mut skycmd_tokenizer) -> c_int;
    pub fn skycmd_tokenizer_encode(tok: *const skycmd_tokenizer, text: *const c_char, text_len: usize, ids: *mut i32, capacity: usize, n_ids: *mut usize) -> c_int;
    pub fn skycmd_tokenizer_decode(tok: *const skycmd_tokenizer, ids: *const i32, n_ids: usize, out: *mut *mut c_char) -> c_int;
    pub fn skycmd_tokenizer_token(tok: *const skycmd_tokenizer, id: i32) -> *const c_char;
    pub fn skycmd_tokenizer_vocab_size(tok: *const skycmd_tokenizer) -> usize;
    pub fn skycmd_tokenizer_special_id(tok: *const skycmd_tokenizer, which: c_int) -> i32;

    pub fn skycmd_request_parse(json: *const c_char, len: usize, out: *mut *mut skycmd_request) -> c_int;
    pub fn skycmd_request_free(req: *mut skycmd_request);
    pub fn skycmd_request_errmsg(req: *const skycmd_request) -> *const c_char;
    pub fn skycmd_request_question_count(req: *const skycmd_request) -> usize;

    pub fn skycmd_session_new(model: *mut skycmd_model, out: *mut *mut skycmd_session) -> c_int;
    pub fn skycmd_session_free(session: *mut skycmd_session);
    pub fn skycmd_session_set_int(session: *mut skycmd_session, option: c_int, value: i64) -> c_int;
    pub fn skycmd_session_errmsg(session: *const skycmd_session) -> *const c_char;
    pub fn skycmd_decide(session: *mut skycmd_session, req: *const skycmd_request, out: *mut *mut skycmd_response) -> c_int;
    pub fn skycmd_decide_batch(session: *mut skycmd_session, reqs: *const *const skycmd_request, n: usize, out: *mut *mut skycmd_response) -> c_int;
    pub fn skycmd_decide_each(session: *mut skycmd_session, reqs: *const *const skycmd_request, n: usize, out: *mut *mut skycmd_response, status: *mut c_int, errmsg: *mut *mut c_char) -> c_int;
    pub fn skycmd_decide_json(session: *mut skycmd_session, request_json: *const c_char, len: usize, response_json: *mut *mut c_char) -> c_int;

    pub fn skycmd_response_free(resp: *mut skycmd_response);
    pub fn skycmd_response_json(resp: *const skycmd_response) -> *const c_char;
    pub fn skycmd_response_answer_count(resp: *const skycmd_response) -> usize;
    pub fn skycmd_response_input_tokens(resp: *const skycmd_response) -> i64;
    pub fn skycmd_response_answer_id(resp: *const skycmd_response, i: usize) -> *const c_char;
    pub fn skycmd_response_answer_type(resp: *const skycmd_response, i: usize) -> c_int;
    pub fn skycmd_response_answer_choice(resp: *const skycmd_response, i: usize) -> *const c_char;
    pub fn skycmd_response_answer_value(resp: *const skycmd_response, i: usize) -> f64;
    pub fn skycmd_response_answer_confidence(resp: *const skycmd_response, i: usize) -> f64;
    pub fn skycmd_response_option_count(resp: *const skycmd_response, i: usize) -> usize;
    pub fn skycmd_response_option_key(resp: *const skycmd_response, i: usize, j: usize) -> *const c_char;
    pub fn skycmd_response_option_probability(resp: *const skycmd_response, i: usize, j: usize) -> f64;
    pub fn skycmd_response_model(resp: *const skycmd_response) -> *const c_char;
    pub fn skycmd_response_option_legend(resp: *const skycmd_response, i: usize, j: usize) -> *const c_char;

    pub fn skycmd_response_windows(resp: *const skycmd_response) -> i64;
    pub fn skycmd_response_answer_window(resp: *const skycmd_response, i: usize, index: *mut i64, token_start: *mut i64, token_end: *mut i64, count: *mut i64) -> c_int;
    pub fn skycmd_response_truncated(resp: *const skycmd_response) -> i64;
    pub fn skycmd_response_state_tokens(resp: *const skycmd_response) -> i64;
    pub fn skycmd_response_state_tokens_dropped(resp: *const skycmd_response) -> i64;
    pub fn skycmd_response_answer_truncated(resp: *const skycmd_response, i: usize) -> c_int;
    pub fn skycmd_response_answer_options_distinct(resp: *const skycmd_response, i: usize) -> i64;
    pub fn skycmd_response_answer_rounds(resp: *const skycmd_response, i: usize) -> i64;

    pub fn skycmd_session_set_string(session: *mut skycmd_session, option: c_int, value: *const c_char) -> c_int;
    pub fn skycmd_response_answer_abstention(resp: *const skycmd_response, i: usize) -> c_int;
    pub fn skycmd_response_answer_abstention_threshold(resp: *const skycmd_response, i: usize) -> f64;

    pub fn skycmd_calibrate(model_path: *const c_char, labelled_path: *const c_char, out_path: *const c_char, opts: *const skycmd_options, report_json: *mut *mut c_char, err: *mut skycmd_error) -> c_int;
}
