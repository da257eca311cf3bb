// Test binaries of this crate find libskycmd through an rpath to the directory skycmd-sys
// linked against (DEP_SKYCMD_LIB_DIR); `rustc-link-arg-tests` keeps it out of libraries.
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_SKYCMD_LIB_DIR");
    if let Ok(dir) = std::env::var("DEP_SKYCMD_LIB_DIR") {
        println!("cargo:rustc-link-arg-tests=-Wl,-rpath,{dir}");
    }
}
