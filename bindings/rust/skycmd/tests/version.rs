// Its own test binary (process): simulating an older library changes process-wide state.
use skycmd::{Model, Options, Status};

#[test]
fn refuses_to_run_on_an_older_library() {
    // Pretend this crate was built against a header one patch newer than the library.
    skycmd::__require_version_for_tests(skycmd::version_number() + 1);
    let e = Model::open("whatever.gguf", &Options::new()).err().unwrap();
    assert_eq!(e.status, Status::VERSION, "{e}");
    let e = skycmd::random_model("s1-pico", std::env::temp_dir().join("never.gguf"), &Options::new()).unwrap_err();
    assert_eq!(e.status, Status::VERSION);
    skycmd::__require_version_for_tests(skycmd::HEADER_VERSION_NUMBER);
    assert_ne!(Model::open("whatever.gguf", &Options::new()).err().unwrap().status, Status::VERSION);
}
