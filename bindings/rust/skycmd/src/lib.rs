//! Safe Rust API of libskycmd: open GGUF "System One" decision models and answer
//! `/v1/systemone` requests; convert, inspect, quantize and make random models.
//!
//! Contract (mirrors `skycmd.h`):
//! - Every fallible call returns `Result<_, Error>`; an [`Error`] carries the library's
//!   [`Status`] (pinned numbers; [`Error::code`] is its name, e.g. "SKYCMD_E_IO"), message
//!   and the OS error behind it: a file that does not exist is [`Error::is_not_found`], and
//!   `std::io::Error::from(e).kind()` is `ErrorKind::NotFound`.
//! - [`Model`] is immutable once open: it is `Send + Sync` and [`Model::decide`] may be called
//!   from many threads at once (each call borrows a pooled session).
//! - [`Session`] holds per-thread scratch: `Send` but not `Sync`, and it borrows its model,
//!   so a model cannot be dropped while one of its sessions lives (the C library would
//!   refuse with `SKYCMD_E_BUSY`).
//! - Drop frees everything; [`Model::close`] frees explicitly and reports errors.
//! - Before the first call the crate checks that the running library is at least the header
//!   version it was built against ([`HEADER_VERSION_NUMBER`]); otherwise every call fails
//!   with [`Status::VERSION`].
//!
//! Beyond open/decide: typed requests ([`Request`] with [`Choice`], [`Score`], [`Noul`], as
//! in the Jev SDK), [`Model::decide_batch`], [`Model::open_buffer`] (the model owns the
//! bytes), the [`Tokenizer`], and [`Options::progress`] (progress and cancellation of
//! [`convert`] and [`quantize`]). Answers carry an `Option<f64>` confidence (None for noul),
//! score legends ([`Probability::legend`]) and the answering model ([`Response::model`]).
//!
//! Linking: by default the installed libskycmd (pkg-config); with feature `bundled` the C
//! sources compiled into the binary (see skycmd-sys).
use std::any::Any;
use std::borrow::Cow;
use std::collections::VecDeque;
use std::ffi::{CStr, CString};
use std::fmt;
use std::marker::PhantomData;
use std::ops::ControlFlow;
use std::os::raw::{c_char, c_int, c_void};
use std::panic::{self, AssertUnwindSafe};
use std::io;
use std::path::{Path, PathBuf};
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

mod request;
pub use request::{Choice, Content, Noul, Question, Request, Score};
#[cfg(feature = "serde")]
mod serde_impl;

use skycmd_sys as sys;

/// `SKYCMD_VERSION_NUMBER` of the header these declarations were written against.
pub const HEADER_VERSION_NUMBER: u32 = sys::SKYCMD_VERSION_NUMBER;

/// A libskycmd status (pinned C values).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Status(pub i32);

impl Status {
    pub const OK: Status = Status(sys::SKYCMD_OK);
    pub const INVALID_ARGUMENT: Status = Status(sys::SKYCMD_E_INVALID_ARGUMENT);
    pub const MISUSE: Status = Status(sys::SKYCMD_E_MISUSE);
    pub const NOMEM: Status = Status(sys::SKYCMD_E_NOMEM);
    pub const IO: Status = Status(sys::SKYCMD_E_IO);
    pub const FORMAT: Status = Status(sys::SKYCMD_E_FORMAT);
    pub const UNSUPPORTED: Status = Status(sys::SKYCMD_E_UNSUPPORTED);
    pub const BUSY: Status = Status(sys::SKYCMD_E_BUSY);
    pub const JSON: Status = Status(sys::SKYCMD_E_JSON);
    pub const REQUEST: Status = Status(sys::SKYCMD_E_REQUEST);
    pub const TOO_LARGE: Status = Status(sys::SKYCMD_E_TOO_LARGE);
    pub const VERSION: Status = Status(sys::SKYCMD_E_VERSION);
    pub const NOT_FOUND: Status = Status(sys::SKYCMD_E_NOT_FOUND);
    pub const INTERNAL: Status = Status(sys::SKYCMD_E_INTERNAL);
    pub const CANCELLED: Status = Status(sys::SKYCMD_E_CANCELLED);

    /// The C name, e.g. "SKYCMD_E_IO".
    pub fn name(self) -> &'static str {
        unsafe { static_str(sys::skycmd_status_name(self.0)) }
    }

    /// The library's English description.
    pub fn description(self) -> &'static str {
        unsafe { static_str(sys::skycmd_strerror(self.0)) }
    }
}

impl fmt::Debug for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({})", self.name(), self.0)
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A failed call: operation, status, the library's message and the OS error behind it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub op: &'static str,
    pub status: Status,
    pub message: String,
    /// The operating system's error number when a system call failed (skycmd_error_errno:
    /// ENOENT for a file that does not exist), else None.
    pub os_error: Option<i32>,
}

impl Error {
    /// The status name, e.g. "SKYCMD_E_IO" (the same in every binding); the number is
    /// `self.status.0`.
    pub fn code(&self) -> &'static str {
        self.status.name()
    }

    /// The OS error number behind the failure, as `std::io::Error::raw_os_error`.
    pub fn raw_os_error(&self) -> Option<i32> {
        self.os_error
    }

    /// The `std::io::ErrorKind` of the OS error (`NotFound` for a file that does not
    /// exist); None when no system call failed.
    pub fn io_kind(&self) -> Option<io::ErrorKind> {
        self.os_error.map(|n| io::Error::from_raw_os_error(n).kind())
    }

    /// Whether the failure is a file that does not exist (a missing model file, the built-in
    /// model not installed).
    pub fn is_not_found(&self) -> bool {
        self.io_kind() == Some(io::ErrorKind::NotFound)
    }
}

/// An `io::Error` of the OS error's kind (`NotFound` for a missing file; `Other` when no
/// system call failed) that carries the skycmd error (`get_ref`, `into_inner`).
impl From<Error> for io::Error {
    fn from(e: Error) -> io::Error {
        io::Error::new(e.io_kind().unwrap_or(io::ErrorKind::Other), e)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let msg = if self.message.is_empty() { self.status.description() } else { &self.message };
        write!(f, "skycmd {}: {}: {}", self.op, self.status.name(), msg)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

fn err(op: &'static str, status: c_int, message: impl Into<String>) -> Error {
    Error { op, status: Status(status), message: message.into(), os_error: None }
}

/// # Safety
/// `p` must be NULL or a NUL-terminated static string.
unsafe fn static_str(p: *const c_char) -> &'static str {
    if p.is_null() {
        ""
    } else {
        CStr::from_ptr(p).to_str().unwrap_or("")
    }
}

/// # Safety
/// `p` must be NULL or a NUL-terminated string valid for the call.
unsafe fn owned_str(p: *const c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

fn cstring(op: &'static str, s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| err(op, sys::SKYCMD_E_INVALID_ARGUMENT, "string contains a NUL byte"))
}

/// A path for the C API. On Unix its bytes exactly as the OS has them (a Linux path need not
/// be UTF-8; the library passes the bytes to `open`), as `default_model_path` hands them back.
/// Elsewhere it must be UTF-8 (the library's own encoding there). A NUL byte is refused.
#[cfg(unix)]
fn cpath(op: &'static str, p: &Path) -> Result<CString> {
    use std::os::unix::ffi::OsStrExt;
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| err(op, sys::SKYCMD_E_INVALID_ARGUMENT, "path contains a NUL byte"))
}

#[cfg(not(unix))]
fn cpath(op: &'static str, p: &Path) -> Result<CString> {
    let s = p.to_str().ok_or_else(|| err(op, sys::SKYCMD_E_INVALID_ARGUMENT, "path is not valid Unicode"))?;
    CString::new(s).map_err(|_| err(op, sys::SKYCMD_E_INVALID_ARGUMENT, "path contains a NUL byte"))
}

/// An owned skycmd_error (handle-less calls report through it).
struct ErrorBox(NonNull<sys::skycmd_error>);

impl ErrorBox {
    fn new(op: &'static str) -> Result<Self> {
        NonNull::new(unsafe { sys::skycmd_error_new() }).map(ErrorBox).ok_or_else(|| err(op, sys::SKYCMD_E_NOMEM, ""))
    }
    fn check(&self, op: &'static str, status: c_int) -> Result<()> {
        if status == sys::SKYCMD_OK {
            Ok(())
        } else {
            let mut e = err(op, status, unsafe { owned_str(sys::skycmd_error_message(self.0.as_ptr())) });
            let n = unsafe { sys::skycmd_error_errno(self.0.as_ptr()) };
            e.os_error = if n != 0 { Some(n) } else { None };
            Err(e)
        }
    }
}

impl Drop for ErrorBox {
    fn drop(&mut self) {
        unsafe { sys::skycmd_error_free(self.0.as_ptr()) }
    }
}

/// The version the crate requires of the running library; tests may raise it to simulate an
/// older library.
static REQUIRED_VERSION: AtomicU32 = AtomicU32::new(HEADER_VERSION_NUMBER);

/// Ok when the running library is at least `header_version_number` (MAJOR*10000 + MINOR*100
/// + PATCH) with the same major; `Status::VERSION` otherwise.
pub fn check_version(header_version_number: u32) -> Result<()> {
    let e = ErrorBox::new("check version")?;
    e.check("check version", unsafe { sys::skycmd_check_version(header_version_number, e.0.as_ptr()) })
}

fn ensure_usable() -> Result<()> {
    check_version(REQUIRED_VERSION.load(Ordering::Relaxed))
}

#[doc(hidden)]
/// Test hook: pretend this crate was built against header version `n`.
pub fn __require_version_for_tests(n: u32) {
    REQUIRED_VERSION.store(n, Ordering::Relaxed);
}

/// The running library's version string, e.g. "0.1.0".
pub fn version() -> &'static str {
    unsafe { static_str(sys::skycmd_version_string()) }
}

/// The running library's build: "git <commit> <build type>" (the build type is
/// "cargo-bundled" for the `bundled` feature's build).
pub fn build_id() -> &'static str {
    unsafe { static_str(sys::skycmd_build_id()) }
}

/// The CPU features the library's kernels use on this machine.
pub fn cpu_features() -> &'static str {
    unsafe { static_str(sys::skycmd_cpu_features()) }
}

/// The kernels the library runs on this CPU, e.g. "f32=avx512 int8=vnni" or "f32=neon int8=i8mm".
pub fn kernels() -> &'static str {
    unsafe { static_str(sys::skycmd_kernels()) }
}

/// The running library's MAJOR*10000 + MINOR*100 + PATCH.
pub fn version_number() -> u32 {
    unsafe { sys::skycmd_version_number() }
}

/// GGUF element types (ggml numbering).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Type {
    F32 = 0,
    F16 = 1,
    Q8_0 = 8,
    BF16 = 30,
}

/// How an open model keeps its matrices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Weights {
    /// f32 FMA products on every CPU (the exact path; the default)
    F32 = 0,
    Q8 = 1,
    Q8Plain = 2,
    /// AMX-BF16 tiles (bf16 hi+lo, within 1e-4 of laya) where usable, else exactly F32
    Bf16x3 = 3,
    /// int8 with one scale per weight row and per activation row; two-pass activations
    /// (Activations::Q8x2, the default) or one (Activations::Q8: the fastest int8 mode)
    Q8Row = 4,
}

/// int8 activation mode of sessions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activations {
    Q8x2 = 0,
    Q8 = 1,
}

/// Output layout of a random model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    Gguf = 0,
    Laya = 1,
}

/// Settings of a call (skycmd_option keys); a call ignores options it does not use.
#[derive(Clone, Debug, Default)]
pub struct Options {
    ints: Vec<(c_int, i64)>,
    strs: Vec<(c_int, String)>,
    session: Vec<(c_int, i64)>,
    progress: Option<ProgressCallback>,
}

type ProgressFn = dyn FnMut(u64, u64) -> ControlFlow<()> + Send;

/// A progress closure shared by the clones of an [`Options`].
#[derive(Clone)]
struct ProgressCallback(Arc<Mutex<Box<ProgressFn>>>);

impl fmt::Debug for ProgressCallback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ProgressCallback")
    }
}

/// What the C trampoline reaches through `user_data` during one call.
struct ProgressState {
    callback: ProgressCallback,
    /// A panic of the closure, caught at the C boundary and resumed after the call returns.
    panic: Mutex<Option<Box<dyn Any + Send>>>,
}

unsafe extern "C" fn progress_trampoline(user_data: *mut c_void, done: u64, total: u64) -> c_int {
    // SAFETY: user_data is the ProgressState owned by the NativeOptions of this call.
    let state = &*(user_data as *const ProgressState);
    let mut panicked = state.panic.lock().unwrap_or_else(|e| e.into_inner());
    if panicked.is_some() {
        return 1;
    }
    // A panic must not unwind into C: catch it, cancel the call, resume it afterwards.
    let r = panic::catch_unwind(AssertUnwindSafe(|| {
        let mut f = state.callback.0.lock().unwrap_or_else(|e| e.into_inner());
        (f)(done, total)
    }));
    match r {
        Ok(ControlFlow::Continue(())) => 0,
        Ok(ControlFlow::Break(())) => 1,
        Err(payload) => {
            *panicked = Some(payload);
            1
        }
    }
}

impl Options {
    pub fn new() -> Self {
        Self::default()
    }
    fn int(mut self, k: c_int, v: i64) -> Self {
        self.ints.push((k, v));
        self
    }
    fn string(mut self, k: c_int, v: &str) -> Self {
        self.strs.push((k, v.to_string()));
        self
    }
    pub fn weights(self, w: Weights) -> Self {
        self.int(sys::SKYCMD_OPT_WEIGHTS, w as i64)
    }
    pub fn max_tokens(self, n: i64) -> Self {
        self.int(sys::SKYCMD_OPT_MAX_TOKENS, n)
    }
    pub fn model_name(self, s: &str) -> Self {
        self.string(sys::SKYCMD_OPT_MODEL_NAME, s)
    }
    pub fn threads(mut self, n: i64) -> Self {
        self.session.push((sys::SKYCMD_OPT_THREADS, n));
        self
    }
    pub fn activations(mut self, a: Activations) -> Self {
        self.session.push((sys::SKYCMD_OPT_ACTIVATIONS, a as i64));
        self
    }
    pub fn tensor_type(self, t: Type) -> Self {
        self.int(sys::SKYCMD_OPT_TYPE, t as i64)
    }
    pub fn head_type(self, t: Type) -> Self {
        self.int(sys::SKYCMD_OPT_HEAD_TYPE, t as i64)
    }
    pub fn seed(self, s: i64) -> Self {
        self.int(sys::SKYCMD_OPT_SEED, s)
    }
    pub fn massive(self, n: i64) -> Self {
        self.int(sys::SKYCMD_OPT_MASSIVE, n)
    }
    pub fn layout(self, l: Layout) -> Self {
        self.int(sys::SKYCMD_OPT_LAYOUT, l as i64)
    }
    pub fn max_array(self, n: i64) -> Self {
        self.int(sys::SKYCMD_OPT_MAX_ARRAY, n)
    }
    pub fn json(self, on: bool) -> Self {
        self.int(sys::SKYCMD_OPT_JSON, on as i64)
    }
    pub fn name(self, s: &str) -> Self {
        self.string(sys::SKYCMD_OPT_NAME, s)
    }
    pub fn pre(self, s: &str) -> Self {
        self.string(sys::SKYCMD_OPT_PRE, s)
    }
    /// Progress of long work ([`convert`], [`quantize`]): the closure gets (done, total) in
    /// units the call chooses and returns `ControlFlow::Break(())` to cancel; the call then
    /// fails with [`Status::CANCELLED`] and leaves no partial output. A panic in the closure
    /// cancels the call and is resumed on the caller's thread once the call has returned.
    pub fn progress(mut self, f: impl FnMut(u64, u64) -> ControlFlow<()> + Send + 'static) -> Self {
        self.progress = Some(ProgressCallback(Arc::new(Mutex::new(Box::new(f)))));
        self
    }

    fn to_native(&self, op: &'static str) -> Result<NativeOptions> {
        let p = NonNull::new(unsafe { sys::skycmd_options_new() }).ok_or_else(|| err(op, sys::SKYCMD_E_NOMEM, ""))?;
        let mut o = NativeOptions { ptr: p, progress: None };
        if let Some(cb) = &self.progress {
            let state = Box::new(ProgressState { callback: cb.clone(), panic: Mutex::new(None) });
            let user_data = &*state as *const ProgressState as *mut c_void;
            let st = unsafe { sys::skycmd_options_set_progress(p.as_ptr(), Some(progress_trampoline), user_data) };
            if st != sys::SKYCMD_OK {
                return Err(err(op, st, "cannot set the progress callback"));
            }
            o.progress = Some(state);
        }
        for &(k, v) in &self.ints {
            let st = unsafe { sys::skycmd_options_set_int(p.as_ptr(), k, v) };
            if st != sys::SKYCMD_OK {
                return Err(err(op, st, format!("option {k} = {v} is out of range")));
            }
        }
        for (k, v) in &self.strs {
            let c = cstring(op, v)?;
            let st = unsafe { sys::skycmd_options_set_string(p.as_ptr(), *k, c.as_ptr()) };
            if st != sys::SKYCMD_OK {
                return Err(err(op, st, format!("option {k} is invalid")));
            }
        }
        Ok(o)
    }
}

struct NativeOptions {
    ptr: NonNull<sys::skycmd_options>,
    /// Boxed so that its address, given to C as user_data, stays put.
    progress: Option<Box<ProgressState>>,
}

impl NativeOptions {
    fn as_ptr(&self) -> *const sys::skycmd_options {
        self.ptr.as_ptr()
    }
    /// Resumes a panic the progress closure raised during the call.
    fn resume_panic(&self) {
        if let Some(state) = &self.progress {
            if let Some(payload) = state.panic.lock().unwrap_or_else(|e| e.into_inner()).take() {
                panic::resume_unwind(payload);
            }
        }
    }
}

impl Drop for NativeOptions {
    fn drop(&mut self) {
        unsafe { sys::skycmd_options_free(self.ptr.as_ptr()) }
    }
}

fn handle_less(op: &'static str, opts: &Options, f: impl FnOnce(*const sys::skycmd_options, *mut sys::skycmd_error) -> c_int) -> Result<()> {
    ensure_usable()?;
    let o = opts.to_native(op)?;
    let e = ErrorBox::new(op)?;
    let st = f(o.as_ptr(), e.0.as_ptr());
    o.resume_panic();
    e.check(op, st)
}

/// Converts a Laya checkpoint directory to one GGUF file (type, head type, name, pre,
/// progress).
pub fn convert(laya_dir: impl AsRef<Path>, out: impl AsRef<Path>, opts: &Options) -> Result<()> {
    let (d, o) = (cpath("convert", laya_dir.as_ref())?, cpath("convert", out.as_ref())?);
    handle_less("convert", opts, |op, e| unsafe { sys::skycmd_convert(d.as_ptr(), o.as_ptr(), op, e) })
}

/// Writes a deterministic random model of a preset (seed, massive, layout).
pub fn random_model(preset: &str, out: impl AsRef<Path>, opts: &Options) -> Result<()> {
    let (p, o) = (cstring("random model", preset)?, cpath("random model", out.as_ref())?);
    handle_less("random model", opts, |op, e| unsafe { sys::skycmd_random_model(p.as_ptr(), o.as_ptr(), op, e) })
}

/// Re-types the tensors of a GGUF file (type, head type, progress).
pub fn quantize(input: impl AsRef<Path>, out: impl AsRef<Path>, opts: &Options) -> Result<()> {
    let (i, o) = (cpath("quantize", input.as_ref())?, cpath("quantize", out.as_ref())?);
    handle_less("quantize", opts, |op, e| unsafe { sys::skycmd_quantize(i.as_ptr(), o.as_ptr(), op, e) })
}

/// The printed header, metadata and tensor table of a GGUF file (max array, json).
pub fn inspect(gguf: impl AsRef<Path>, opts: &Options) -> Result<String> {
    let g = cpath("inspect", gguf.as_ref())?;
    let mut out: *mut c_char = ptr::null_mut();
    handle_less("inspect", opts, |op, e| unsafe { sys::skycmd_inspect(g.as_ptr(), op, &mut out, e) })?;
    let s = unsafe { owned_str(out) };
    unsafe { sys::skycmd_string_free(out) };
    Ok(s)
}

/// Where the library finds the built-in model s1-pico-flappy.gguf
/// (skycmd_default_model_path): `$SKYCMD_DEFAULT_MODEL`, else beside libskycmd (an installed
/// prefix's share/skycmd/models, or a build tree's), else the library's configured data
/// directory. With feature `bundled` the library is compiled into the program, so "beside
/// libskycmd" is beside the program. None there: [`Status::NOT_FOUND`] with
/// [`Error::is_not_found`], naming the places looked in.
pub fn default_model_path() -> Result<PathBuf> {
    ensure_usable()?;
    let e = ErrorBox::new("default model")?;
    let mut out: *mut c_char = ptr::null_mut();
    e.check("default model", unsafe { sys::skycmd_default_model_path(&mut out, e.0.as_ptr()) })?;
    // The path's bytes as the C library has them (any bytes on Unix).
    let bytes = unsafe { CStr::from_ptr(out) }.to_bytes().to_vec();
    unsafe { sys::skycmd_string_free(out) };
    #[cfg(unix)]
    let path = {
        use std::os::unix::ffi::OsStringExt;
        PathBuf::from(std::ffi::OsString::from_vec(bytes))
    };
    #[cfg(not(unix))]
    let path = PathBuf::from(String::from_utf8_lossy(&bytes).into_owned());
    Ok(path)
}

/// The type of a question.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnswerType {
    Choice,
    Score,
    Noul,
}

/// One option of an answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Probability {
    /// "0".."n-1" for score, "false"/"true" for noul, the criteria key for choice.
    pub key: String,
    pub p: f64,
    /// Score answers: the request's description of this level (a string as its text, any
    /// other JSON value as compact JSON; the wire's "legend"). None otherwise.
    pub legend: Option<String>,
}

/// The answer to one question.
///
/// Identical answers compare equal (`PartialEq`): an absent confidence is `None`, not NaN.
#[derive(Clone, Debug, PartialEq)]
pub struct Answer {
    pub id: String,
    pub kind: AnswerType,
    /// The chosen key (choice questions only).
    pub choice: Option<String>,
    /// Expected level (score), P(true) (noul), the chosen key's probability (choice).
    pub value: f64,
    /// Confidence of choice and score answers; None for noul (the wire has none).
    pub confidence: Option<f64>,
    pub probabilities: Vec<Probability>,
}

impl Answer {
    /// The probability of option `key`.
    pub fn probability(&self, key: &str) -> Option<f64> {
        self.probabilities.iter().find(|p| p.key == key).map(|p| p.p)
    }
}

/// The answers of a response keyed by question id, in request order (the wire's
/// "answers" object): [`Answers::get`] and `answers["id"]` look one up, [`Answers::iter`]
/// and `for (id, answer) in &answers` go through them in order, `answers[0]` is the first.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Answers(Vec<Answer>);

impl Answers {
    /// The answer to question `id`, or None.
    pub fn get(&self, id: &str) -> Option<&Answer> {
        // A request has a few questions: a scan is cheaper than building an index.
        self.0.iter().find(|a| a.id == id)
    }

    /// Whether question `id` was answered.
    pub fn contains_key(&self, id: &str) -> bool {
        self.get(id).is_some()
    }

    /// `(id, answer)` in request order.
    pub fn iter(&self) -> AnswersIter<'_> {
        AnswersIter(self.0.iter())
    }

    /// The question ids in request order.
    pub fn keys(&self) -> impl Iterator<Item = &str> + '_ {
        self.0.iter().map(|a| a.id.as_str())
    }

    /// The answers in request order.
    pub fn values(&self) -> std::slice::Iter<'_, Answer> {
        self.0.iter()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The answers in request order, as a slice.
    pub fn as_slice(&self) -> &[Answer] {
        &self.0
    }

    /// The answers in request order (each carries its id).
    pub fn into_vec(self) -> Vec<Answer> {
        self.0
    }
}

/// The iterator of [`Answers::iter`]: `(id, answer)` in request order.
#[derive(Clone, Debug)]
pub struct AnswersIter<'a>(std::slice::Iter<'a, Answer>);

impl<'a> Iterator for AnswersIter<'a> {
    type Item = (&'a str, &'a Answer);
    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|a| (a.id.as_str(), a))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl DoubleEndedIterator for AnswersIter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.0.next_back().map(|a| (a.id.as_str(), a))
    }
}

impl ExactSizeIterator for AnswersIter<'_> {}

impl<'a> IntoIterator for &'a Answers {
    type Item = (&'a str, &'a Answer);
    type IntoIter = AnswersIter<'a>;
    fn into_iter(self) -> AnswersIter<'a> {
        self.iter()
    }
}

/// `(id, answer)` in request order, owned.
impl IntoIterator for Answers {
    type Item = (String, Answer);
    type IntoIter = std::iter::Map<std::vec::IntoIter<Answer>, fn(Answer) -> (String, Answer)>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter().map(|a| (a.id.clone(), a))
    }
}

/// `answers["action"]`; panics when there is no such question, as a map's `Index` does.
impl std::ops::Index<&str> for Answers {
    type Output = Answer;
    fn index(&self, id: &str) -> &Answer {
        self.get(id).unwrap_or_else(|| panic!("no answer to question {id:?}"))
    }
}

/// `answers[i]`: the answer to the request's i-th question.
impl std::ops::Index<usize> for Answers {
    type Output = Answer;
    fn index(&self, i: usize) -> &Answer {
        &self.0[i]
    }
}

/// The answers of one decide call, copied out of the C response.
#[derive(Clone, Debug, PartialEq)]
pub struct Response {
    /// The name of the model that answered (the wire's "model").
    pub model: String,
    /// Keyed by question id, in request order.
    pub answers: Answers,
    pub input_tokens: i64,
    /// The library's wire JSON: {"model", "answers", "usage"}.
    pub json: String,
}

impl Response {
    /// The answer to question `id` (`self.answers.get(id)`).
    pub fn answer(&self, id: &str) -> Option<&Answer> {
        self.answers.get(id)
    }

    /// # Safety
    /// `r` must be a valid response.
    unsafe fn copy_from(r: *const sys::skycmd_response) -> Response {
        let n = sys::skycmd_response_answer_count(r);
        let mut answers = Vec::with_capacity(n);
        for i in 0..n {
            let kind = match sys::skycmd_response_answer_type(r, i) {
                sys::SKYCMD_QTYPE_CHOICE => AnswerType::Choice,
                sys::SKYCMD_QTYPE_SCORE => AnswerType::Score,
                _ => AnswerType::Noul,
            };
            let m = sys::skycmd_response_option_count(r, i);
            let probabilities = (0..m)
                .map(|j| {
                    let legend = sys::skycmd_response_option_legend(r, i, j);
                    Probability {
                        key: owned_str(sys::skycmd_response_option_key(r, i, j)),
                        p: sys::skycmd_response_option_probability(r, i, j),
                        legend: if legend.is_null() { None } else { Some(owned_str(legend)) },
                    }
                })
                .collect();
            let c = sys::skycmd_response_answer_choice(r, i);
            answers.push(Answer {
                id: owned_str(sys::skycmd_response_answer_id(r, i)),
                kind,
                choice: if c.is_null() { None } else { Some(owned_str(c)) },
                value: sys::skycmd_response_answer_value(r, i),
                // The C ABI marks "no confidence" (noul) as NaN.
                confidence: Some(sys::skycmd_response_answer_confidence(r, i)).filter(|c| !c.is_nan()),
                probabilities,
            });
        }
        Response {
            model: owned_str(sys::skycmd_response_model(r)),
            answers: Answers(answers),
            input_tokens: sys::skycmd_response_input_tokens(r),
            json: owned_str(sys::skycmd_response_json(r)),
        }
    }
}

/// The memory a model opened with [`Model::open_buffer`] reads its weights from.
type ModelBuffer = Box<dyn AsRef<[u8]> + Send + Sync>;

/// An open decision model.
pub struct Model {
    ptr: NonNull<sys::skycmd_model>,
    session_opts: Vec<(c_int, i64)>,
    /// Idle sessions for `Model::decide`; each is used by one call at a time.
    pool: Mutex<Vec<NonNull<sys::skycmd_session>>>,
    /// The GGUF bytes of a model opened from memory: the C model points into them, so they
    /// are dropped after it (Drop frees the model before the fields are dropped).
    buffer: Option<ModelBuffer>,
}

// SAFETY: skycmd.h: "a skycmd_model is immutable once open and may be shared by any number of
// threads". The pool is behind a Mutex and each pooled session is used by one call at a time.
unsafe impl Send for Model {}
unsafe impl Sync for Model {}

impl Model {
    /// Opens a GGUF decision model (weights, max tokens, model name, threads, activations).
    /// A path that does not exist is [`Status::IO`] with [`Error::is_not_found`].
    pub fn open(path: impl AsRef<Path>, opts: &Options) -> Result<Model> {
        ensure_usable()?;
        let p = cpath("open", path.as_ref())?;
        let o = opts.to_native("open")?;
        let e = ErrorBox::new("open")?;
        let mut m: *mut sys::skycmd_model = ptr::null_mut();
        e.check("open", unsafe { sys::skycmd_model_open(p.as_ptr(), o.as_ptr(), &mut m, e.0.as_ptr()) })?;
        let ptr = NonNull::new(m).ok_or_else(|| err("open", sys::SKYCMD_E_INTERNAL, "open returned no model"))?;
        Ok(Model { ptr, session_opts: opts.session.clone(), pool: Mutex::new(Vec::new()), buffer: None })
    }

    /// Opens the built-in model ([`default_model_path`]) with the options of [`Model::open`].
    pub fn open_default(opts: &Options) -> Result<Model> {
        Model::open(default_model_path()?, opts)
    }

    /// Opens a model from GGUF bytes in memory (the options of [`Model::open`]). Nothing is
    /// copied: the model takes ownership of `buffer` (a `Vec<u8>`, `Box<[u8]>`,
    /// `&'static [u8]` from `include_bytes!`, `Arc<[u8]>`, ...) and reads it until dropped.
    pub fn open_buffer<B: AsRef<[u8]> + Send + Sync + 'static>(buffer: B, opts: &Options) -> Result<Model> {
        ensure_usable()?;
        // Boxed first: the bytes' address must not change after the C model has seen it
        // (an array's AsRef points into the value itself, which moves with it).
        let buffer: ModelBuffer = Box::new(buffer);
        let bytes: &[u8] = (*buffer).as_ref();
        let o = opts.to_native("open buffer")?;
        let e = ErrorBox::new("open buffer")?;
        let mut m: *mut sys::skycmd_model = ptr::null_mut();
        let st = unsafe { sys::skycmd_model_open_buffer(bytes.as_ptr() as *const c_void, bytes.len(), o.as_ptr(), &mut m, e.0.as_ptr()) };
        e.check("open buffer", st)?;
        let ptr = NonNull::new(m).ok_or_else(|| err("open buffer", sys::SKYCMD_E_INTERNAL, "open returned no model"))?;
        Ok(Model { ptr, session_opts: opts.session.clone(), pool: Mutex::new(Vec::new()), buffer: Some(buffer) })
    }

    /// The model's tokenizer (borrowed from the model).
    pub fn tokenizer(&self) -> Tokenizer<'_> {
        let p = unsafe { sys::skycmd_model_tokenizer(self.ptr.as_ptr()) };
        Tokenizer { ptr: NonNull::new(p as *mut _).expect("an open model has a tokenizer"), owned: false, _model: PhantomData }
    }

    /// The model name reported in responses.
    pub fn name(&self) -> String {
        unsafe { owned_str(sys::skycmd_model_name(self.ptr.as_ptr())) }
    }

    /// A hyper-parameter by GGUF-style name ("embedding_length", "decision.max_tokens", ...).
    pub fn int_parameter(&self, name: &str) -> Result<i64> {
        let n = cstring("model int", name)?;
        let mut v = 0i64;
        let st = unsafe { sys::skycmd_model_get_int(self.ptr.as_ptr(), n.as_ptr(), &mut v) };
        if st != sys::SKYCMD_OK {
            return Err(err("model int", st, format!("no hyper-parameter {name}")));
        }
        Ok(v)
    }

    /// A session of this model for one thread (it borrows the model).
    pub fn session(&self) -> Result<Session<'_>> {
        let ptr = self.new_session()?;
        Ok(Session { ptr, _model: PhantomData })
    }

    fn new_session(&self) -> Result<NonNull<sys::skycmd_session>> {
        let mut s: *mut sys::skycmd_session = ptr::null_mut();
        let st = unsafe { sys::skycmd_session_new(self.ptr.as_ptr(), &mut s) };
        if st != sys::SKYCMD_OK {
            return Err(err("session", st, Status(st).description()));
        }
        let s = NonNull::new(s).ok_or_else(|| err("session", sys::SKYCMD_E_INTERNAL, "no session"))?;
        for &(k, v) in &self.session_opts {
            let st = unsafe { sys::skycmd_session_set_int(s.as_ptr(), k, v) };
            if st != sys::SKYCMD_OK {
                let m = unsafe { owned_str(sys::skycmd_session_errmsg(s.as_ptr())) };
                unsafe { sys::skycmd_session_free(s.as_ptr()) };
                return Err(err("session option", st, m));
            }
        }
        Ok(s)
    }

    /// Runs `f` with a pooled session (a new one if none is idle).
    fn with_pooled_session<T>(&self, f: impl FnOnce(NonNull<sys::skycmd_session>) -> T) -> Result<T> {
        let s = match self.pool.lock().unwrap_or_else(|e| e.into_inner()).pop() {
            Some(s) => s,
            None => self.new_session()?,
        };
        let r = f(s);
        self.pool.lock().unwrap_or_else(|e| e.into_inner()).push(s);
        Ok(r)
    }

    /// Answers a request (its JSON text); callable from many threads at once (a pooled
    /// session per call).
    pub fn decide(&self, request_json: &str) -> Result<Response> {
        self.with_pooled_session(|s| unsafe { decide_raw(s, request_json) })?
    }

    /// Answers a typed [`Request`].
    pub fn decide_request(&self, request: &Request) -> Result<Response> {
        self.decide(&request.to_json()?)
    }

    /// Answers several requests (JSON texts) together: their sequences share the model's
    /// batches, and each answer is exactly what [`Model::decide`] gives for its request
    /// alone. All or nothing: an invalid request fails the call, its message naming the
    /// request ("request 2: ...").
    pub fn decide_batch<S: AsRef<str>>(&self, requests: &[S]) -> Result<Vec<Response>> {
        self.with_pooled_session(|s| unsafe { decide_batch_raw(s, requests) })?
    }

    /// [`Session::decide_each`] with a pooled session, which goes back to the pool when the
    /// iterator is dropped.
    pub fn decide_each<I>(&self, requests: I) -> Result<DecideEach<'_, I::IntoIter>>
    where
        I: IntoIterator,
        I::Item: AsRequestJson,
    {
        let s = match self.pool.lock().unwrap_or_else(|e| e.into_inner()).pop() {
            Some(s) => s,
            None => self.new_session()?,
        };
        Ok(DecideEach { session: s, pool: Some(self), input: requests.into_iter().fuse(), ready: VecDeque::new(), _session: PhantomData })
    }

    /// Frees the model now, reporting an error from the library if any. The model is
    /// consumed, so a closed handle cannot be used:
    ///
    /// ```compile_fail,E0382
    /// let m = skycmd::Model::open("m.gguf", &skycmd::Options::new()).unwrap();
    /// m.close().unwrap();
    /// m.decide("{}").unwrap(); // error: use of moved value `m`
    /// ```
    pub fn close(self) -> Result<()> {
        let mut m = std::mem::ManuallyDrop::new(self);
        let r = m.free();
        // SAFETY: m is never used again; drop the non-native fields in place.
        unsafe {
            ptr::drop_in_place(&mut m.session_opts);
            ptr::drop_in_place(&mut m.pool);
            ptr::drop_in_place(&mut m.buffer);
        }
        r
    }

    fn free(&mut self) -> Result<()> {
        for s in self.pool.get_mut().unwrap_or_else(|e| e.into_inner()).drain(..) {
            unsafe { sys::skycmd_session_free(s.as_ptr()) };
        }
        let st = unsafe { sys::skycmd_model_free(self.ptr.as_ptr()) };
        if st != sys::SKYCMD_OK {
            return Err(err("close", st, "the model still has sessions"));
        }
        Ok(())
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        let _ = self.free();
    }
}

/// A parsed request, freed on drop.
struct ParsedRequest(*mut sys::skycmd_request);

impl ParsedRequest {
    fn parse(json: &str) -> Result<ParsedRequest> {
        let mut req: *mut sys::skycmd_request = ptr::null_mut();
        let st = unsafe { sys::skycmd_request_parse(json.as_ptr() as *const c_char, json.len(), &mut req) };
        let parsed = ParsedRequest(req);
        if st != sys::SKYCMD_OK {
            let m = if req.is_null() { Status(st).description().to_string() } else { unsafe { owned_str(sys::skycmd_request_errmsg(req)) } };
            return Err(err("decide", st, m));
        }
        Ok(parsed)
    }
}

impl Drop for ParsedRequest {
    fn drop(&mut self) {
        unsafe { sys::skycmd_request_free(self.0) }
    }
}

/// # Safety
/// `s` must be a valid session not used by another thread during the call.
unsafe fn decide_raw(s: NonNull<sys::skycmd_session>, request_json: &str) -> Result<Response> {
    let req = ParsedRequest::parse(request_json)?;
    let mut resp: *mut sys::skycmd_response = ptr::null_mut();
    let st = sys::skycmd_decide(s.as_ptr(), req.0, &mut resp);
    if st != sys::SKYCMD_OK {
        return Err(err("decide", st, owned_str(sys::skycmd_session_errmsg(s.as_ptr()))));
    }
    let r = Response::copy_from(resp);
    sys::skycmd_response_free(resp);
    Ok(r)
}

/// # Safety
/// `s` must be a valid session not used by another thread during the call.
unsafe fn decide_batch_raw<J: AsRef<str>>(s: NonNull<sys::skycmd_session>, jsons: &[J]) -> Result<Vec<Response>> {
    let mut reqs = Vec::with_capacity(jsons.len());
    for (i, j) in jsons.iter().enumerate() {
        reqs.push(ParsedRequest::parse(j.as_ref()).map_err(|mut e| {
            e.message = format!("request {i}: {}", e.message);
            e
        })?);
    }
    let ptrs: Vec<*const sys::skycmd_request> = reqs.iter().map(|r| r.0 as *const _).collect();
    let mut out: Vec<*mut sys::skycmd_response> = vec![ptr::null_mut(); jsons.len()];
    let st = sys::skycmd_decide_batch(s.as_ptr(), ptrs.as_ptr(), ptrs.len(), out.as_mut_ptr());
    if st != sys::SKYCMD_OK {
        return Err(err("decide batch", st, owned_str(sys::skycmd_session_errmsg(s.as_ptr()))));
    }
    Ok(out
        .into_iter()
        .map(|r| {
            let copy = Response::copy_from(r);
            sys::skycmd_response_free(r);
            copy
        })
        .collect())
}

/// Per-thread scratch of a model: `Send` (it may move to another thread) but not `Sync`
/// (skycmd.h: a session belongs to one thread at a time).
///
/// ```compile_fail,E0277
/// fn needs_sync<T: Sync>() {}
/// needs_sync::<skycmd::Session<'static>>(); // a session is not Sync
/// ```
///
/// A session borrows its model, so the model cannot be closed while the session lives:
///
/// ```compile_fail,E0505
/// let m = skycmd::Model::open("m.gguf", &skycmd::Options::new()).unwrap();
/// let s = m.session().unwrap();
/// m.close().unwrap(); // error: cannot move out of `m` because it is borrowed
/// drop(s);
/// ```
pub struct Session<'m> {
    ptr: NonNull<sys::skycmd_session>,
    _model: PhantomData<&'m Model>,
}

// SAFETY: a session may be used by any one thread at a time; &mut self on decide makes the
// use exclusive. No `Sync`: the raw pointer field already opts out of it.
unsafe impl Send for Session<'_> {}

impl Session<'_> {
    /// Answers a request (its JSON text) with this session.
    pub fn decide(&mut self, request_json: &str) -> Result<Response> {
        unsafe { decide_raw(self.ptr, request_json) }
    }

    /// Answers a typed [`Request`] with this session.
    pub fn decide_request(&mut self, request: &Request) -> Result<Response> {
        let json = request.to_json()?;
        self.decide(&json)
    }

    /// [`Model::decide_batch`] with this session.
    pub fn decide_batch<S: AsRef<str>>(&mut self, requests: &[S]) -> Result<Vec<Response>> {
        unsafe { decide_batch_raw(self.ptr, requests) }
    }

    /// Answers a stream of requests (JSON texts or typed [`Request`]s), each on its own
    /// account: the iterator yields one `Result` per request, in input order, and a bad
    /// request (malformed JSON, an invalid request, a builder error) is that item's `Err`;
    /// the stream goes on. It reads the input lazily, [`DECIDE_EACH_GROUP`] requests at a
    /// time, and answers each group with one `skycmd_decide_each` call (the group's
    /// sequences share the model's batches; each answer is exactly what [`Session::decide`]
    /// gives), so it holds at most one group of requests or responses.
    ///
    /// ```no_run
    /// # let m = skycmd::Model::open("m.gguf", &skycmd::Options::new()).unwrap();
    /// let mut s = m.session().unwrap();
    /// let lines = std::io::stdin().lines().map(|l| l.unwrap());
    /// for r in s.decide_each(lines) {
    ///     match r {
    ///         Ok(resp) => println!("{}", resp.json),
    ///         Err(e) => eprintln!("{}: {}", e.code(), e.message),
    ///     }
    /// }
    /// ```
    pub fn decide_each<I>(&mut self, requests: I) -> DecideEach<'_, I::IntoIter>
    where
        I: IntoIterator,
        I::Item: AsRequestJson,
    {
        DecideEach { session: self.ptr, pool: None, input: requests.into_iter().fuse(), ready: VecDeque::new(), _session: PhantomData }
    }

    /// Sets a session option (threads, activations).
    pub fn set_threads(&mut self, n: i64) -> Result<()> {
        let st = unsafe { sys::skycmd_session_set_int(self.ptr.as_ptr(), sys::SKYCMD_OPT_THREADS, n) };
        if st != sys::SKYCMD_OK {
            return Err(err("session option", st, unsafe { owned_str(sys::skycmd_session_errmsg(self.ptr.as_ptr())) }));
        }
        Ok(())
    }
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        unsafe { sys::skycmd_session_free(self.ptr.as_ptr()) }
    }
}

/// How many requests [`Session::decide_each`] and [`Model::decide_each`] read and answer
/// together (one `skycmd_decide_each` call).
pub const DECIDE_EACH_GROUP: usize = 32;

/// A request given to the streaming form: JSON text (`&str`, `String`, ...) or a typed
/// [`Request`] (a builder error is then that item's error).
pub trait AsRequestJson {
    /// The request's `/v1/systemone` JSON text.
    fn request_json(&self) -> Result<Cow<'_, str>>;
}

impl AsRequestJson for str {
    fn request_json(&self) -> Result<Cow<'_, str>> {
        Ok(Cow::Borrowed(self))
    }
}

impl AsRequestJson for String {
    fn request_json(&self) -> Result<Cow<'_, str>> {
        Ok(Cow::Borrowed(self.as_str()))
    }
}

impl AsRequestJson for Cow<'_, str> {
    fn request_json(&self) -> Result<Cow<'_, str>> {
        Ok(Cow::Borrowed(self.as_ref()))
    }
}

impl AsRequestJson for Request {
    fn request_json(&self) -> Result<Cow<'_, str>> {
        self.to_json().map(Cow::Owned)
    }
}

impl<T: AsRequestJson + ?Sized> AsRequestJson for &T {
    fn request_json(&self) -> Result<Cow<'_, str>> {
        (**self).request_json()
    }
}

impl<T: AsRequestJson + ?Sized> AsRequestJson for Box<T> {
    fn request_json(&self) -> Result<Cow<'_, str>> {
        (**self).request_json()
    }
}

/// The iterator of [`Session::decide_each`] and [`Model::decide_each`]: one
/// `Result<Response>` per request, in input order.
pub struct DecideEach<'a, I: Iterator> {
    session: NonNull<sys::skycmd_session>,
    /// The model whose pool the session returns to on drop (Model::decide_each), else None.
    pool: Option<&'a Model>,
    input: std::iter::Fuse<I>,
    /// The answered group not yet handed out (at most DECIDE_EACH_GROUP items).
    ready: VecDeque<Result<Response>>,
    _session: PhantomData<&'a mut ()>,
}

impl<I> Iterator for DecideEach<'_, I>
where
    I: Iterator,
    I::Item: AsRequestJson,
{
    type Item = Result<Response>;

    fn next(&mut self) -> Option<Result<Response>> {
        if self.ready.is_empty() {
            self.answer_group();
        }
        self.ready.pop_front()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let (lo, hi) = self.input.size_hint();
        let n = self.ready.len();
        (lo.saturating_add(n), hi.and_then(|h| h.checked_add(n)))
    }
}

impl<I> DecideEach<'_, I>
where
    I: Iterator,
    I::Item: AsRequestJson,
{
    /// Reads the next group of requests and answers it into `ready`.
    fn answer_group(&mut self) {
        // A slot per request: parsed (for C; a failed parse is reported by C in its slot)
        // or already failed here (a builder error, no memory to parse).
        let mut parsed: Vec<ParsedRequest> = Vec::with_capacity(DECIDE_EACH_GROUP);
        let mut slots: Vec<std::result::Result<usize, Error>> = Vec::with_capacity(DECIDE_EACH_GROUP);
        for item in self.input.by_ref().take(DECIDE_EACH_GROUP) {
            match item.request_json() {
                Ok(json) => {
                    let mut req: *mut sys::skycmd_request = ptr::null_mut();
                    unsafe { sys::skycmd_request_parse(json.as_ptr() as *const c_char, json.len(), &mut req) };
                    if req.is_null() {
                        slots.push(Err(err("decide each", sys::SKYCMD_E_NOMEM, "no memory to parse the request")));
                    } else {
                        slots.push(Ok(parsed.len()));
                        parsed.push(ParsedRequest(req));
                    }
                }
                Err(e) => slots.push(Err(e)),
            }
        }
        if slots.is_empty() {
            return;
        }
        let ptrs: Vec<*const sys::skycmd_request> = parsed.iter().map(|r| r.0 as *const _).collect();
        let mut answered = unsafe { decide_each_raw(self.session, &ptrs) }.map(|v| v.into_iter());
        for slot in slots {
            let item = match (slot, &mut answered) {
                (Err(e), _) => Err(e),
                (Ok(_), Ok(it)) => it.next().unwrap_or_else(|| Err(err("decide each", sys::SKYCMD_E_INTERNAL, "missing slot"))),
                // The call itself failed (out of memory, ...): every request of the group.
                (Ok(_), Err(e)) => Err(e.clone()),
            };
            self.ready.push_back(item);
        }
    }
}

impl<I: Iterator> Drop for DecideEach<'_, I> {
    fn drop(&mut self) {
        if let Some(m) = self.pool {
            m.pool.lock().unwrap_or_else(|e| e.into_inner()).push(self.session);
        }
    }
}

/// # Safety
/// `s` must be a valid session not used by another thread during the call; `reqs` valid
/// (possibly failed) parsed requests.
unsafe fn decide_each_raw(s: NonNull<sys::skycmd_session>, reqs: &[*const sys::skycmd_request]) -> Result<Vec<Result<Response>>> {
    let n = reqs.len();
    let mut out: Vec<*mut sys::skycmd_response> = vec![ptr::null_mut(); n];
    let mut status: Vec<c_int> = vec![sys::SKYCMD_OK; n];
    let mut msgs: Vec<*mut c_char> = vec![ptr::null_mut(); n];
    let st = sys::skycmd_decide_each(s.as_ptr(), reqs.as_ptr(), n, out.as_mut_ptr(), status.as_mut_ptr(), msgs.as_mut_ptr());
    if st != sys::SKYCMD_OK {
        return Err(err("decide each", st, owned_str(sys::skycmd_session_errmsg(s.as_ptr()))));
    }
    Ok((0..n)
        .map(|i| {
            let r = if status[i] == sys::SKYCMD_OK && !out[i].is_null() {
                Ok(Response::copy_from(out[i]))
            } else {
                // NULL message: no memory for the copy; the status's description stands in.
                let st = if status[i] == sys::SKYCMD_OK { sys::SKYCMD_E_INTERNAL } else { status[i] };
                let m = if msgs[i].is_null() { Status(st).description().to_string() } else { owned_str(msgs[i]) };
                Err(err("decide each", st, m))
            };
            sys::skycmd_response_free(out[i]);
            sys::skycmd_string_free(msgs[i]);
            r
        })
        .collect())
}

/// Special tokens of a vocabulary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Special {
    Cls = 0,
    Sep = 1,
    Mask = 2,
    Pad = 3,
    Unk = 4,
}

/// A byte-level BPE tokenizer: a model's ([`Model::tokenizer`], borrowed from the model) or
/// one loaded from a Hugging Face tokenizer.json ([`Tokenizer::open_json`], owned).
/// Immutable, so `Send + Sync`.
pub struct Tokenizer<'m> {
    ptr: NonNull<sys::skycmd_tokenizer>,
    owned: bool,
    _model: PhantomData<&'m Model>,
}

// SAFETY: skycmd.h: "Tokenizers are immutable"; every tokenizer call takes a const pointer.
unsafe impl Send for Tokenizer<'_> {}
unsafe impl Sync for Tokenizer<'_> {}

impl Tokenizer<'static> {
    /// Loads a Hugging Face tokenizer.json (byte-level BPE).
    pub fn open_json(path: impl AsRef<Path>) -> Result<Tokenizer<'static>> {
        ensure_usable()?;
        let p = cpath("tokenizer", path.as_ref())?;
        let e = ErrorBox::new("tokenizer")?;
        let mut t: *mut sys::skycmd_tokenizer = ptr::null_mut();
        e.check("tokenizer", unsafe { sys::skycmd_tokenizer_open_json(p.as_ptr(), &mut t, e.0.as_ptr()) })?;
        let ptr = NonNull::new(t).ok_or_else(|| err("tokenizer", sys::SKYCMD_E_INTERNAL, "no tokenizer"))?;
        Ok(Tokenizer { ptr, owned: true, _model: PhantomData })
    }
}

impl Tokenizer<'_> {
    fn encode_into(&self, text: &str, ids: &mut [i32]) -> Result<usize> {
        let mut n = 0usize;
        let st = unsafe { sys::skycmd_tokenizer_encode(self.ptr.as_ptr(), text.as_ptr() as *const c_char, text.len(), ids.as_mut_ptr(), ids.len(), &mut n) };
        if st != sys::SKYCMD_OK {
            return Err(err("encode", st, Status(st).description()));
        }
        Ok(n)
    }

    /// The token ids of `text`, as Hugging Face `tokenizers` encodes it with
    /// `add_special_tokens=False`.
    pub fn encode(&self, text: &str) -> Result<Vec<i32>> {
        let n = self.count(text)?;
        let mut ids = vec![0i32; n];
        let m = self.encode_into(text, &mut ids)?;
        debug_assert_eq!(m, n);
        ids.truncate(m);
        Ok(ids)
    }

    /// The number of tokens of `text` (no ids are stored).
    pub fn count(&self, text: &str) -> Result<usize> {
        self.encode_into(text, &mut [])
    }

    /// The UTF-8 text of `ids` (byte-level decoding).
    pub fn decode(&self, ids: &[i32]) -> Result<String> {
        let mut out: *mut c_char = ptr::null_mut();
        let st = unsafe { sys::skycmd_tokenizer_decode(self.ptr.as_ptr(), ids.as_ptr(), ids.len(), &mut out) };
        if st != sys::SKYCMD_OK {
            return Err(err("decode", st, Status(st).description()));
        }
        let s = unsafe { owned_str(out) };
        unsafe { sys::skycmd_string_free(out) };
        Ok(s)
    }

    /// The vocabulary entry of `id` in its byte-level form (e.g. "Ġthe"); None out of range.
    pub fn token(&self, id: i32) -> Option<String> {
        let p = unsafe { sys::skycmd_tokenizer_token(self.ptr.as_ptr(), id) };
        if p.is_null() {
            None
        } else {
            Some(unsafe { owned_str(p) })
        }
    }

    pub fn vocab_size(&self) -> usize {
        unsafe { sys::skycmd_tokenizer_vocab_size(self.ptr.as_ptr()) }
    }

    /// The id of a special token; None if the vocabulary has none.
    pub fn special_id(&self, which: Special) -> Option<i32> {
        let id = unsafe { sys::skycmd_tokenizer_special_id(self.ptr.as_ptr(), which as c_int) };
        if id < 0 {
            None
        } else {
            Some(id)
        }
    }
}

impl Drop for Tokenizer<'_> {
    fn drop(&mut self) {
        if self.owned {
            unsafe { sys::skycmd_tokenizer_free(self.ptr.as_ptr()) };
        }
    }
}
