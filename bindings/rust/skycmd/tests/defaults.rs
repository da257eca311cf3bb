// The built-in model (default_model_path, Model::open_default) and the error naming: code()
// is the status name; a file that does not exist is is_not_found() and io::ErrorKind::NotFound.
// Its own test binary: the one test that sets SKYCMD_DEFAULT_MODEL (read by the C library's
// getenv) runs beside no other test that calls into the library's environment reads.
mod common;

use std::io;

use common::*;
use skycmd::{Model, Options, Status};

fn answers(m: Model, req: &str) -> String {
    let r = m.decide(req).unwrap();
    dump(&r)
}

#[test]
fn default_model_opens_like_its_path() {
    let Some(path) = model() else { return };
    let req = request();
    let want = answers(Model::open(&path, &Options::new()).unwrap(), &req);

    std::env::set_var("SKYCMD_DEFAULT_MODEL", &path);
    assert_eq!(skycmd::default_model_path().unwrap(), path);
    assert_eq!(answers(Model::open_default(&Options::new()).unwrap(), &req), want);
    assert_eq!(answers(Model::open_default(&Options::new().threads(1)).unwrap(), &req), want);

    let missing = fixture().dir.join("no-default.gguf");
    std::env::set_var("SKYCMD_DEFAULT_MODEL", &missing);
    for e in [skycmd::default_model_path().unwrap_err(), Model::open_default(&Options::new()).err().unwrap()] {
        assert_eq!(e.status, Status::NOT_FOUND);
        assert_eq!(e.code(), "SKYCMD_E_NOT_FOUND");
        assert!(e.is_not_found() && e.io_kind() == Some(io::ErrorKind::NotFound), "{e:?}");
        assert!(e.message.contains(missing.to_str().unwrap()), "{e}");
    }

    // Unset: beside the library (the build tree's copy with the shared library; with
    // `bundled`, beside the test program: usually nothing).
    std::env::remove_var("SKYCMD_DEFAULT_MODEL");
    match skycmd::default_model_path() {
        Ok(p) => {
            assert_eq!(p.file_name().unwrap(), "s1-pico-flappy.gguf");
            assert_eq!(Model::open_default(&Options::new()).unwrap().name(), "s1-pico-flappy");
        }
        Err(e) => assert!(e.is_not_found() && e.message.contains("looked in"), "{e}"),
    }
}

#[test]
fn error_codes_and_not_found() {
    let missing = fixture().dir.join("does-not-exist.gguf");
    let e = Model::open(&missing, &Options::new()).err().unwrap();
    assert_eq!((e.status, e.code(), e.status.0), (Status::IO, "SKYCMD_E_IO", 4));
    assert!(e.is_not_found(), "{e:?}");
    assert!(e.raw_os_error().is_some() && e.message.contains("does-not-exist"));
    assert!(e.to_string().starts_with("skycmd open: SKYCMD_E_IO: "), "{e}");
    let as_io = io::Error::from(e.clone());
    assert_eq!(as_io.kind(), io::ErrorKind::NotFound);
    assert_eq!(as_io.get_ref().unwrap().downcast_ref::<skycmd::Error>(), Some(&e));
    assert!(skycmd::inspect(&missing, &Options::new()).unwrap_err().is_not_found());
    // A tokenizer.json that does not exist: the same not-found error as a model file.
    let e = skycmd::Tokenizer::open_json(fixture().dir.join("no-such-tokenizer.json")).err().unwrap();
    assert_eq!(e.code(), "SKYCMD_E_IO");
    assert!(e.is_not_found() && e.message.contains("no-such-tokenizer.json"), "{e:?}");
    assert_eq!(io::Error::from(e).kind(), io::ErrorKind::NotFound);

    let junk = fixture().dir.join("junk-code.gguf");
    std::fs::write(&junk, "not a gguf file").unwrap();
    let e = Model::open(&junk, &Options::new()).err().unwrap();
    assert_eq!((e.code(), e.os_error), ("SKYCMD_E_FORMAT", None));
    assert!(!e.is_not_found());
    assert_eq!(io::Error::from(e).kind(), io::ErrorKind::Other);
    let e = skycmd::Tokenizer::open_json(&junk).err().unwrap();
    assert!(e.status != Status::OK && !e.is_not_found(), "{e:?}");
}
