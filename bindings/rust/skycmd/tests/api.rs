mod common;

use std::sync::Arc;

use common::*;
use skycmd::{AnswerType, Model, Options, Status, Type};

fn assert_send_sync<T: Send + Sync>() {}
fn assert_send<T: Send>() {}

#[test]
fn thread_contract_in_the_types() {
    assert_send_sync::<Model>();
    assert_send::<skycmd::Session<'static>>();
    // Session is !Sync: see the compile_fail doctest on skycmd::Session.
}

#[test]
fn status_values_match_the_header() {
    let pairs = [
        (Status::OK, skycmd_sys::SKYCMD_OK, "SKYCMD_OK"),
        (Status::IO, skycmd_sys::SKYCMD_E_IO, "SKYCMD_E_IO"),
        (Status::JSON, skycmd_sys::SKYCMD_E_JSON, "SKYCMD_E_JSON"),
        (Status::VERSION, skycmd_sys::SKYCMD_E_VERSION, "SKYCMD_E_VERSION"),
        (Status::CANCELLED, skycmd_sys::SKYCMD_E_CANCELLED, "SKYCMD_E_CANCELLED"),
    ];
    for (s, v, name) in pairs {
        assert_eq!(s.0, v);
        assert_eq!(s.name(), name);
        assert!(!s.description().is_empty());
    }
}

#[test]
fn version_check_accepts_own_header_refuses_newer() {
    skycmd::check_version(skycmd::HEADER_VERSION_NUMBER).unwrap();
    assert!(skycmd::version_number() >= skycmd::HEADER_VERSION_NUMBER);
    for newer in [skycmd::version_number() + 1, skycmd::version_number() + 100, skycmd::version_number() + 10000] {
        let e = skycmd::check_version(newer).unwrap_err();
        assert_eq!(e.status, Status::VERSION);
        assert!(!e.message.is_empty());
    }
}

#[test]
fn example_request_answered() {
    let Some(p) = model() else { return };
    let m = Model::open(&p, &Options::new()).unwrap();
    let r = m.decide(&request()).unwrap();
    check_answers(&r);
    assert!(m.int_parameter("decision.max_head_tokens").unwrap() > 0);
    assert_eq!(m.int_parameter("no.such.key").unwrap_err().status, Status::NOT_FOUND);
    // An explicit session gives the same bits as the pooled path.
    let mut s = m.session().unwrap();
    assert_eq!(dump(&s.decide(&request()).unwrap()), dump(&r));
    drop(s);
    if let Ok(d) = std::env::var("SKYCMD_DUMP_DIR") {
        std::fs::write(std::path::Path::new(&d).join("rust.txt"), dump(&r)).unwrap();
    }
    m.close().unwrap();
}

#[test]
fn errors_bad_path_bad_json_invalid_request_closed_handle() {
    let dir = &fixture().dir;
    let e = Model::open(dir.join("does-not-exist.gguf"), &Options::new()).err().unwrap();
    assert_eq!(e.status, Status::IO, "{e}");
    assert!(e.message.contains("does-not-exist"), "{e}");
    let junk = dir.join("junk.gguf");
    std::fs::write(&junk, "this is not a gguf file at all").unwrap();
    assert_eq!(Model::open(&junk, &Options::new()).err().unwrap().status, Status::FORMAT);
    assert_eq!(skycmd::inspect(dir.join("nope.gguf"), &Options::new()).unwrap_err().status, Status::IO);
    assert_eq!(Model::open("bad\0path", &Options::new()).err().unwrap().status, Status::INVALID_ARGUMENT);
    assert!(skycmd::random_model("no-such-preset", dir.join("p.gguf"), &Options::new()).is_err());
    assert!(skycmd::convert(dir.join("no-such-dir"), dir.join("c.gguf"), &Options::new()).is_err());
    assert!(!dir.join("c.gguf").exists());
    // Closed handles cannot be used in safe Rust (Model::close consumes the model; see the
    // compile_fail doctest); the raw layer reports a NULL handle as misuse.
    unsafe {
        let mut s = std::ptr::null_mut();
        assert_eq!(skycmd_sys::skycmd_session_new(std::ptr::null_mut(), &mut s), skycmd_sys::SKYCMD_E_MISUSE);
        let mut r = std::ptr::null_mut();
        assert_eq!(skycmd_sys::skycmd_decide(std::ptr::null_mut(), std::ptr::null(), &mut r), skycmd_sys::SKYCMD_E_MISUSE);
    }
    let Some(p) = model() else { return };
    let m = Model::open(&p, &Options::new()).unwrap();
    let e = m.decide(r#"{"state": "x", "questions": {"#).unwrap_err();
    assert_eq!(e.status, Status::JSON);
    assert!(!e.message.is_empty());
    let e = m.decide(r#"{"state": "x", "questions": {"a": {"type": "choice", "instructions": "?", "criteria": {}}}}"#).unwrap_err();
    assert_eq!(e.status, Status::REQUEST);
    assert!(e.message.contains("criteria"), "{e}");
    m.close().unwrap();
}

/// A Unix path need not be UTF-8: its bytes go to the library as they are (Go and Python
/// open such a file too); a NUL byte in a path is still refused.
#[cfg(unix)]
#[test]
fn non_utf8_paths_are_passed_as_bytes() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let Some(p) = model() else { return };
    let dir = fixture().dir.join("non-utf8");
    std::fs::create_dir_all(&dir).unwrap();
    let odd = dir.join(OsStr::from_bytes(b"x\xff.gguf"));
    assert!(odd.to_str().is_none());
    std::fs::copy(&p, &odd).unwrap();
    let m = Model::open(&odd, &Options::new()).unwrap();
    check_answers(&m.decide(&request()).unwrap());
    m.close().unwrap();
    assert!(skycmd::inspect(&odd, &Options::new()).unwrap().contains("modern-bert"));
    let q = dir.join(OsStr::from_bytes(b"q\xfe.gguf"));
    skycmd::quantize(&odd, &q, &Options::new().tensor_type(Type::Q8_0)).unwrap();
    assert!(q.exists());
    let r = dir.join(OsStr::from_bytes(b"r\xfd.gguf"));
    skycmd::random_model("s1-pico", &r, &Options::new()).unwrap();
    assert!(r.exists());
    // A missing non-UTF-8 file is the library's not-found error, not a refusal.
    let e = Model::open(dir.join(OsStr::from_bytes(b"missing\xff.gguf")), &Options::new()).err().unwrap();
    assert_eq!(e.status, Status::IO, "{e}");
    assert!(e.is_not_found(), "{e}");
    let e = Model::open(dir.join(OsStr::from_bytes(b"a\0b.gguf")), &Options::new()).err().unwrap();
    assert_eq!(e.status, Status::INVALID_ARGUMENT, "{e}");
    assert!(e.message.contains("NUL"), "{e}");
}

#[test]
fn inspect_quantize_random() {
    let Some(p) = model() else { return };
    let dir = &fixture().dir;
    assert!(skycmd::inspect(&p, &Options::new()).unwrap().contains("modern-bert"));
    let js = skycmd::inspect(&p, &Options::new().json(true)).unwrap();
    assert!(js.trim().starts_with('{') && js.trim().ends_with('}'));
    let q = dir.join("q8.gguf");
    skycmd::quantize(&p, &q, &Options::new().tensor_type(Type::Q8_0)).unwrap();
    let m = Model::open(&q, &Options::new()).unwrap();
    check_answers(&m.decide(&request()).unwrap());
    let seeded = dir.join("seeded.gguf");
    skycmd::random_model("s1-pico", &seeded, &Options::new().seed(7)).unwrap();
    assert!(std::fs::metadata(&seeded).unwrap().len() > 0);
}

#[test]
fn concurrent_decide_on_a_shared_model() {
    let Some(p) = model() else { return };
    let m = Arc::new(Model::open(&p, &Options::new()).unwrap());
    let req = Arc::new(request());
    let want = dump(&m.decide(&req).unwrap());
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let (m, req) = (Arc::clone(&m), Arc::clone(&req));
            std::thread::spawn(move || (0..10).map(|_| dump(&m.decide(&req).unwrap())).collect::<Vec<_>>())
        })
        .collect();
    for h in handles {
        for d in h.join().unwrap() {
            assert_eq!(d, want);
        }
    }
    // A session moved to another thread (Send) works there.
    let m2 = Model::open(&p, &Options::new()).unwrap();
    std::thread::scope(|sc| {
        let mut s = m2.session().unwrap();
        let req = req.clone();
        sc.spawn(move || assert_eq!(s.decide(&req).unwrap().answers[0].kind, AnswerType::Choice));
    });
}
