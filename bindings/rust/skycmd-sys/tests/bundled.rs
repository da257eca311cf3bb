//! The `bundled` build: the static library exports only the public ABI (its hidden internal
//! sk_* symbols were made local, as the shared library's version script does), and it is the
//! library the test binary runs.
#![cfg(feature = "bundled")]
use std::ffi::CStr;
use std::process::Command;

#[test]
fn only_the_public_abi_is_global() {
    let Some(archive) = option_env!("SKYCMD_SYS_BUNDLED_ARCHIVE") else {
        panic!("the internal symbols were not localized (see the build script's warning)");
    };
    let out = Command::new("nm").args(["-g", "--defined-only", archive]).output().expect("nm (binutils)");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let globals: Vec<&str> = text.lines().filter_map(|l| l.split_whitespace().nth(2)).collect();
    assert!(globals.len() > 50, "{text}");
    let internal: Vec<&&str> = globals.iter().filter(|s| !s.starts_with("skycmd_")).collect();
    assert!(internal.is_empty(), "global non-API symbols: {internal:?}");
    let all = Command::new("nm").arg(archive).output().unwrap();
    let local_sk = String::from_utf8_lossy(&all.stdout).lines().filter(|l| l.contains(" t sk_")).count();
    assert!(local_sk > 100, "the internal functions are expected as local symbols, found {local_sk}");
}

#[test]
fn the_build_id_names_the_bundled_build() {
    let id = unsafe { CStr::from_ptr(skycmd_sys::skycmd_build_id()) }.to_str().unwrap();
    assert!(id.starts_with("git ") && id.ends_with(" cargo-bundled"), "{id}");
}
