/*
 * skycmd_java.i - the Java binding's SWIG interface: bindings/swig/skycmd.i (the boxes shared
 * with Go and Node) plus what only Java needs, kept here so that a change for Java does not
 * change the Go and Node wrappers. generate.sh runs SWIG on this file.
 */
%module skycmd

/* Strings cross JNI as real UTF-8 bytes. SWIG's default (GetStringUTFChars/NewStringUTF)
 * uses JNI's "modified UTF-8", which writes a character outside the BMP (an emoji) as two
 * 3-byte surrogates and U+0000 as C0 80: invalid UTF-8 for the library, so a request or a
 * tokenizer text with an emoji would not reach C as the same bytes the other languages send.
 * Java encodes/decodes with StandardCharsets.UTF_8; the input gets its NUL in Java. */
%typemap(jni) const char *, char * "jbyteArray"
%typemap(jtype) const char *, char * "byte[]"
%typemap(jstype) const char *, char * "String"
%typemap(javain) const char *, char * "org.skycmd.internal.skycmd.cString($javainput, \"$javainput\")"
/* A String with a NUL (U+0000) would reach C cut at it (the C strings end there): every
 * string argument refuses it with an IllegalArgumentException naming the argument, never a
 * silent truncation. */
%pragma(java) modulecode=%{
  /** The UTF-8 bytes of s with the terminating NUL (null: null); a NUL inside s throws. */
  static byte[] cString(String s, String argument) {
    if (s == null) return null;
    int at = s.indexOf('\0');
    if (at >= 0) {
      throw new IllegalArgumentException(argument + " contains a NUL character (at index " + at
          + "): the C library would cut the string there");
    }
    return (s + "\0").getBytes(java.nio.charset.StandardCharsets.UTF_8);
  }
%}
%typemap(javaout) const char *, char * {
    byte[] utf8 = $jnicall;
    return utf8 == null ? null : new String(utf8, java.nio.charset.StandardCharsets.UTF_8);
  }
%typemap(in, noblock=1) const char *, char * {
  $1 = 0;
  if ($input) {
    $1 = ($1_ltype)(*jenv)->GetByteArrayElements(jenv, $input, 0);
    if (!$1) return $null;
  }
}
%typemap(freearg, noblock=1) const char *, char * {
  if ($1) (*jenv)->ReleaseByteArrayElements(jenv, $input, (jbyte *)$1, JNI_ABORT);
}
/* The one string macro would become a constant initialised through the byte[] getter;
 * Skycmd.version() (skycmd_version_string) gives the library's own string instead. */
%ignore SKYCMD_VERSION_STRING;
%typemap(out, noblock=1) const char *, char * {
  if ($1) {
    jsize utf8_len = (jsize)strlen((const char *)$1);
    $result = (*jenv)->NewByteArray(jenv, utf8_len);
    if ($result) (*jenv)->SetByteArrayRegion(jenv, $result, 0, utf8_len, (const jbyte *)$1);
  }
}

%include "skycmd.i"

/* Java only: convert, quantize, random model or model open with a listener that the progress callback
 * calls synchronously on the calling thread (the library reports from the thread that made
 * the call), so a Java listener sees every report as it happens and can stop the work at
 * once. The listener is any object with `boolean report(long done, long total)`; returning
 * false, an exception it throws (left pending, so Java rethrows it when this returns), or the
 * options box's cancel() flag cancels the call (SKYCMD_E_CANCELLED, no output). The box's own
 * atomics still record every report. A report from another thread (none today) only updates
 * the atomics. */
%typemap(in, numinputs=0) JNIEnv *calling_env "$1 = jenv;"
%{
#include <pthread.h>
typedef struct SkyJavaProgress {
    JNIEnv *env;
    jobject listener;
    jmethodID report;
    SkyOptions *box;
    pthread_t thread;
    int failed; /* the listener threw: stop, call nothing more */
} SkyJavaProgress;

static int sky_java_progress(void *user_data, uint64_t done, uint64_t total) {
    SkyJavaProgress *p = (SkyJavaProgress *)user_data;
    int stop = sky_options_progress(p->box, done, total);
    if (stop || p->failed || !pthread_equal(p->thread, pthread_self())) return stop || p->failed;
    jboolean go_on = (*p->env)->CallBooleanMethod(p->env, p->listener, p->report, (jlong)done, (jlong)total);
    if ((*p->env)->ExceptionCheck(p->env)) p->failed = 1;
    return p->failed || !go_on || __atomic_load_n(&p->box->cancel, __ATOMIC_ACQUIRE) != 0;
}
%}
%inline %{
/* op: 0 convert(a = Laya dir, b = out), 1 quantize(a = in, b = out), 2 random(a = preset, b = out). */
int skyFileCallWithListener(JNIEnv *calling_env, SkyCall *call, int op, const char *a, const char *b,
                            SkyOptions *opts, jobject listener) {
    SkyJavaProgress p;
    jclass cls;
    int st;
    if (!call) return SKYCMD_E_MISUSE;
    if (!opts || !opts->h || !listener || op < 0 || op > 2) {
        skycmd_error_clear(call->err);
        return sky_call_done(call, !opts || !opts->h ? SKYCMD_E_NOMEM : SKYCMD_E_INVALID_ARGUMENT);
    }
    cls = (*calling_env)->GetObjectClass(calling_env, listener);
    p.report = cls ? (*calling_env)->GetMethodID(calling_env, cls, "report", "(JJ)Z") : NULL;
    if (!p.report) return sky_call_done(call, SKYCMD_E_INVALID_ARGUMENT); /* NoSuchMethodError pending */
    p.env = calling_env;
    p.listener = listener;
    p.box = opts;
    p.thread = pthread_self();
    p.failed = 0;
    skycmd_options_set_progress(opts->h, sky_java_progress, &p);
    if (op == 0) st = skycmd_convert(a, b, opts->h, call->err);
    else if (op == 1) st = skycmd_quantize(a, b, opts->h, call->err);
    else st = skycmd_random_model(a, b, opts->h, call->err);
    skycmd_options_set_progress(opts->h, sky_options_progress, opts);
    return sky_call_done(call, st);
}

/* Open a model (skycmd_model_open) into an empty model box, with a listener as above: the
 * load reports its progress to it on the calling thread, and returning false, throwing, or
 * the options box's cancel() stops the load (SKYCMD_E_CANCELLED, no model). */
int skyOpenModelWithListener(JNIEnv *calling_env, SkyCall *call, const char *path, SkyOptions *opts,
                             jobject listener, SkyModel *into) {
    SkyJavaProgress p;
    jclass cls;
    int st;
    if (!call) return SKYCMD_E_MISUSE;
    skycmd_error_clear(call->err);
    if (!into || into->h) return sky_call_done(call, SKYCMD_E_MISUSE);
    if (!opts || !opts->h || !listener)
        return sky_call_done(call, !opts || !opts->h ? SKYCMD_E_NOMEM : SKYCMD_E_INVALID_ARGUMENT);
    cls = (*calling_env)->GetObjectClass(calling_env, listener);
    p.report = cls ? (*calling_env)->GetMethodID(calling_env, cls, "report", "(JJ)Z") : NULL;
    if (!p.report) return sky_call_done(call, SKYCMD_E_INVALID_ARGUMENT); /* NoSuchMethodError pending */
    p.env = calling_env;
    p.listener = listener;
    p.box = opts;
    p.thread = pthread_self();
    p.failed = 0;
    skycmd_options_set_progress(opts->h, sky_java_progress, &p);
    st = skycmd_model_open(path, opts->h, &into->h, call->err);
    skycmd_options_set_progress(opts->h, sky_options_progress, opts);
    return sky_call_done(call, st);
}
%}
