// Links libskycmd found through the `pkg-config` CLI (no crates needed), or
// SKYCMD_LIB_DIR (+ SKYCMD_INCLUDE_DIR) when set. PKG_CONFIG_PATH=<builddir>/pkgconfig picks
// the build tree's skycmd-uninstalled.pc. The library directory is exported to dependents as
// DEP_SKYCMD_LIB_DIR and added as an rpath (test binaries find the library without
// LD_LIBRARY_PATH). The compile flags go to the header-check test as SKYCMD_CFLAGS.
use std::process::Command;

fn pkg_config(args: &[&str]) -> Option<String> {
    let out = Command::new("pkg-config").args(args).arg("skycmd").output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-env-changed=SKYCMD_LIB_DIR");
    println!("cargo:rerun-if-env-changed=SKYCMD_INCLUDE_DIR");
    if std::env::var_os("DOCS_RS").is_some() {
        return;
    }
    let (lib_dirs, cflags) = if let Ok(dir) = std::env::var("SKYCMD_LIB_DIR") {
        let inc = std::env::var("SKYCMD_INCLUDE_DIR").map(|i| format!("-I{i}")).unwrap_or_default();
        (vec![dir], inc)
    } else {
        let libs = pkg_config(&["--libs"]).unwrap_or_else(|| {
            panic!("skycmd-sys: `pkg-config --libs skycmd` failed; set PKG_CONFIG_PATH (e.g. <builddir>/pkgconfig) or SKYCMD_LIB_DIR")
        });
        let dirs = libs.split_whitespace().filter_map(|t| t.strip_prefix("-L")).map(String::from).collect();
        (dirs, pkg_config(&["--cflags"]).unwrap_or_default())
    };
    for d in &lib_dirs {
        println!("cargo:rustc-link-search=native={d}");
        println!("cargo:rustc-link-arg=-Wl,-rpath,{d}");
    }
    println!("cargo:rustc-link-lib=dylib=skycmd");
    if let Some(d) = lib_dirs.first() {
        println!("cargo:lib_dir={d}");
    }
    println!("cargo:rustc-env=SKYCMD_CFLAGS={cflags}");
}
