//! Checks the hand-written declarations of src/lib.rs against include/skycmd.h:
//!  1. every `SKYCMD_API` function and every enum constant of the header is declared here;
//!  2. a C file generated from src/lib.rs, with one `__builtin_types_compatible_p` assertion
//!     per function, callback typedef and constant, compiles against the header with the
//!     C compiler (`cc`), so a wrong parameter, return type or value fails the test.
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

const RUST_SRC: &str = include_str!("../src/lib.rs");

fn cflags() -> Vec<String> {
    env!("SKYCMD_CFLAGS").split_whitespace().map(String::from).collect()
}

fn header_text() -> String {
    let mut dirs: Vec<PathBuf> = cflags().iter().filter_map(|f| f.strip_prefix("-I")).map(PathBuf::from).collect();
    dirs.push(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../include"));
    for d in dirs {
        if let Ok(t) = std::fs::read_to_string(d.join("skycmd.h")) {
            return t;
        }
    }
    panic!("skycmd.h not found through SKYCMD_CFLAGS or the source tree");
}

/// Translates one Rust FFI type to C.
fn c_type(rust: &str) -> String {
    let t = rust.trim();
    if let Some(rest) = t.strip_prefix("*const ") {
        // "T const *" (not "const T *") so that nested pointers keep every qualifier:
        // *const *const T -> T const * const *
        return format!("{} const *", c_type(rest));
    }
    if let Some(rest) = t.strip_prefix("*mut ") {
        let inner = c_type(rest);
        return if inner.ends_with('*') { format!("{inner}*") } else { format!("{inner} *") };
    }
    match t {
        "c_char" => "char",
        "c_int" => "int",
        "c_uint" => "unsigned",
        "c_void" => "void",
        "usize" => "size_t",
        "u8" => "uint8_t",
        "i32" => "int32_t",
        "i64" => "int64_t",
        "u64" => "uint64_t",
        "f64" => "double",
        "" | "()" => "void",
        other => other, // skycmd_* handle and typedef names are the same in C
    }
    .to_string()
}

/// Splits "a: T, b: U" into C types.
fn c_params(params: &str) -> String {
    let ps: Vec<String> = params
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| c_type(p.split_once(':').expect("param without type").1))
        .collect();
    if ps.is_empty() { "void".into() } else { ps.join(", ") }
}

struct RustFn {
    name: String,
    params: String,
    ret: String,
}

fn rust_fns() -> Vec<RustFn> {
    let mut out = Vec::new();
    for line in RUST_SRC.lines().map(str::trim) {
        let Some(rest) = line.strip_prefix("pub fn ") else { continue };
        let open = rest.find('(').unwrap();
        let close = rest.rfind(')').unwrap();
        let ret = rest[close + 1..].trim().trim_end_matches(';').trim();
        out.push(RustFn {
            name: rest[..open].to_string(),
            params: rest[open + 1..close].to_string(),
            ret: ret.strip_prefix("->").unwrap_or("").trim().to_string(),
        });
    }
    out
}

fn rust_consts() -> Vec<(String, String)> {
    RUST_SRC
        .lines()
        .map(str::trim)
        .filter_map(|l| l.strip_prefix("pub const "))
        .map(|l| {
            let (name, rest) = l.split_once(':').unwrap();
            let value = rest.split_once('=').unwrap().1.trim().trim_end_matches(';').trim();
            (name.trim().to_string(), value.to_string())
        })
        .collect()
}

/// `pub type NAME = Option<unsafe extern "C" fn(params) -> ret>;`
fn rust_callbacks() -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for l in RUST_SRC.lines().map(str::trim) {
        let Some(rest) = l.strip_prefix("pub type ") else { continue };
        let (name, def) = rest.split_once('=').unwrap();
        let open = def.find("fn(").unwrap() + 3;
        let close = def.rfind(')').unwrap();
        let tail = def[close + 1..].trim().trim_end_matches(';').trim().trim_end_matches('>').trim();
        let ret = tail.strip_prefix("->").unwrap_or("").trim().to_string();
        out.push((name.trim().to_string(), def[open..close].to_string(), ret));
    }
    out
}

fn header_functions(h: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (pos, _) in h.match_indices("SKYCMD_API ") {
        let tail = &h[pos..];
        let Some(paren) = tail.find('(') else { continue };
        let before = &tail[..paren];
        let name: String = before.chars().rev().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>().chars().rev().collect();
        if name.starts_with("skycmd_") {
            names.insert(name);
        }
    }
    names
}

fn header_enum_constants(h: &str) -> BTreeSet<String> {
    h.lines()
        .map(str::trim)
        .filter(|l| l.starts_with("SKYCMD_") && l.contains('='))
        .map(|l| l.split(|c: char| c.is_whitespace() || c == '=').next().unwrap().to_string())
        .collect()
}

#[test]
fn every_header_function_and_constant_is_declared() {
    let h = header_text();
    let ours: BTreeSet<String> = rust_fns().into_iter().map(|f| f.name).collect();
    let theirs = header_functions(&h);
    assert!(theirs.len() > 50, "parsed only {} header functions", theirs.len());
    let missing: Vec<_> = theirs.difference(&ours).collect();
    let extra: Vec<_> = ours.difference(&theirs).collect();
    assert!(missing.is_empty() && extra.is_empty(), "missing in Rust: {missing:?}; not in header: {extra:?}");
    let consts: BTreeSet<String> = rust_consts().into_iter().map(|c| c.0).collect();
    let missing: Vec<_> = header_enum_constants(&h).into_iter().filter(|c| !consts.contains(c)).collect();
    assert!(missing.is_empty(), "enum constants missing in Rust: {missing:?}");
}

#[test]
fn declarations_match_the_header_in_a_c_compile() {
    let mut c = String::from("#include <stddef.h>\n#include <stdint.h>\n#include \"skycmd.h\"\n");
    let fns = rust_fns();
    for f in &fns {
        c += &format!(
            "_Static_assert(__builtin_types_compatible_p(__typeof__(&{n}), {r} (*)({p})), \"{n}: Rust declaration differs from skycmd.h\");\n",
            n = f.name, r = c_type(&f.ret), p = c_params(&f.params)
        );
    }
    for (name, params, ret) in rust_callbacks() {
        c += &format!(
            "_Static_assert(__builtin_types_compatible_p({name}, {r} (*)({p})), \"{name}: Rust typedef differs\");\n",
            r = c_type(&ret), p = c_params(&params)
        );
    }
    for (name, value) in rust_consts() {
        c += &format!("_Static_assert(({name}) == ({value}), \"{name} != {value}\");\n");
    }
    let dir = std::env::temp_dir().join(format!("skycmd-sys-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("check.c");
    std::fs::write(&file, &c).unwrap();
    let out = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-std=c11", "-fsyntax-only", "-Wall", "-Werror"])
        .args(cflags())
        .arg(format!("-I{}", PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../include").display()))
        .arg(&file)
        .output()
        .expect("cannot run the C compiler");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success(), "C check failed:\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(fns.len() > 50);
}

#[test]
fn the_checker_catches_a_wrong_declaration() {
    // The same machinery must reject a deliberately wrong prototype.
    let c = format!(
        "#include \"skycmd.h\"\n_Static_assert(__builtin_types_compatible_p(__typeof__(&skycmd_inspect), int (*)({})), \"x\");\n",
        c_params("gguf_path: *const c_char, opts: *mut skycmd_options, out: *mut *mut c_char, err: *mut skycmd_error")
    );
    let dir = std::env::temp_dir().join(format!("skycmd-sys-neg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("neg.c");
    std::fs::write(&file, c).unwrap();
    let out = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-std=c11", "-fsyntax-only"])
        .args(cflags())
        .arg(format!("-I{}", PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../include").display()))
        .arg(&file)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!out.status.success(), "a const-mismatched options parameter was accepted");
}

#[test]
fn links_and_calls_the_library() {
    unsafe {
        assert!(super_version() >= skycmd_sys::SKYCMD_VERSION_NUMBER);
        assert_eq!(skycmd_sys::skycmd_check_version(skycmd_sys::SKYCMD_VERSION_NUMBER, std::ptr::null_mut()), skycmd_sys::SKYCMD_OK);
        // Misuse is a status, not a crash.
        let mut s = std::ptr::null_mut();
        assert_eq!(skycmd_sys::skycmd_session_new(std::ptr::null_mut(), &mut s), skycmd_sys::SKYCMD_E_MISUSE);
    }
}

unsafe fn super_version() -> u32 {
    skycmd_sys::skycmd_version_number()
}
