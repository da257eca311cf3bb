// Links libskycmd in one of two ways:
//
// - default (system): the installed library, found with the `pkg-config` crate
//   (PKG_CONFIG_PATH=<prefix>/lib/pkgconfig, or <builddir>/pkgconfig for the build tree's
//   skycmd-uninstalled.pc), or SKYCMD_LIB_DIR (+ SKYCMD_INCLUDE_DIR) when set. The library
//   directory is exported to dependents as DEP_SKYCMD_LIB_DIR and added as an rpath of this
//   package's own test binaries (an rpath set here never reaches a downstream binary: users of
//   a prefix set LD_LIBRARY_PATH, or use `bundled`).
// - feature `bundled`: libskycmd's C sources compiled with `cc` and linked statically. Inside
//   the repository the sources are ../../../src and ../../../include; in a packaged crate they
//   are libskycmd/ (staged by bindings/rust/package.sh). The flags are the CMake build's:
//   C11, -O3 whatever the Cargo profile (the library is not what a user debugs, and at -O0 a
//   question takes many times longer), NDEBUG, hidden visibility, -falign-loops=64 for the
//   SIMD kernel files (their AVX2/AVX-512 code is selected at run time through target
//   attributes, so no -m flags), SKYCMD_BUILD but not SKYCMD_SHARED (which only selects
//   dllexport on Windows; this is a static library). The objects are then partially linked into one object whose
//   hidden symbols (the internal sk_* functions) are made local, as the shared library's
//   version script does: only skycmd_* stay global, so nothing clashes with other C code
//   linked into the same binary. (ELF: `cc -r` and `objcopy --localize-hidden`; Mach-O
//   targets: `cc -r` of the object files alone, since Apple's ld -r makes hidden symbols
//   local by itself and has neither --whole-archive nor objcopy; and _DARWIN_C_SOURCE, as
//   CMake defines it there.) cJSON and utf8proc come from pkg-config, each linked
//   statically where its static archive exists (Debian ships libutf8proc.a, no libcjson.a).
//
// Either way the header's include flags go to the header-check test as SKYCMD_CFLAGS.
use std::env;
use std::path::PathBuf;

fn main() {
    for v in ["PKG_CONFIG_PATH", "SKYCMD_LIB_DIR", "SKYCMD_INCLUDE_DIR", "SKYCMD_SYS_OBJCOPY"] {
        println!("cargo:rerun-if-env-changed={v}");
    }
    println!("cargo:rerun-if-changed=build.rs");
    if env::var_os("DOCS_RS").is_some() {
        return;
    }
    if env::var_os("CARGO_FEATURE_BUNDLED").is_some() {
        #[cfg(feature = "bundled")]
        bundled::build();
    } else {
        system();
    }
}

fn system() {
    let (lib_dirs, cflags) = if let Ok(dir) = env::var("SKYCMD_LIB_DIR") {
        let inc = env::var("SKYCMD_INCLUDE_DIR").map(|i| format!("-I{i}")).unwrap_or_default();
        println!("cargo:rustc-link-search=native={dir}");
        println!("cargo:rustc-link-lib=dylib=skycmd");
        (vec![PathBuf::from(dir)], inc)
    } else {
        let lib = pkg_config::Config::new().atleast_version("0.1.0").probe("skycmd").unwrap_or_else(|e| {
            panic!(
                "skycmd-sys: libskycmd not found through pkg-config ({e}).\n\
                 Set PKG_CONFIG_PATH=<prefix>/lib/pkgconfig (or <builddir>/pkgconfig), or \
                 SKYCMD_LIB_DIR, or build with the `bundled` feature."
            )
        });
        let cflags: Vec<String> = lib.include_paths.iter().map(|p| format!("-I{}", p.display())).collect();
        (lib.link_paths, cflags.join(" "))
    };
    for d in &lib_dirs {
        println!("cargo:rustc-link-arg-tests=-Wl,-rpath,{}", d.display());
    }
    if let Some(d) = lib_dirs.first() {
        println!("cargo:lib_dir={}", d.display());
    }
    println!("cargo:rustc-env=SKYCMD_CFLAGS={cflags}");
}

#[cfg(feature = "bundled")]
mod bundled {
    use super::*;
    use std::path::Path;
    use std::process::Command;

    /// A directory holding `src/` and `include/` of libskycmd.
    fn sources() -> (PathBuf, String) {
        let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
        // Inside the repository: the live sources (a staged libskycmd/ copy could be stale).
        let root = manifest.join("../../..");
        let in_repo = root.join("src/api/core.c").is_file()
            && root.join("bindings/rust/skycmd-sys").canonicalize().ok() == manifest.canonicalize().ok();
        if in_repo {
            let commit = Command::new("git")
                .args(["rev-parse", "--short=12", "HEAD"])
                .current_dir(&root)
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
                .unwrap_or_else(|| "unknown".into());
            return (root, commit);
        }
        let staged = manifest.join("libskycmd");
        if !staged.join("src/api/core.c").is_file() {
            panic!(
                "skycmd-sys (bundled): no C sources in {}: package the crate with \
                 bindings/rust/package.sh, which stages the repository's src/ and include/ there",
                staged.display()
            );
        }
        let commit = std::fs::read_to_string(staged.join("GIT_COMMIT")).map(|s| s.trim().to_string()).unwrap_or_else(|_| "unknown".into());
        (staged, commit)
    }

    /// The C files of the library: every module under src/ except the programs (cli, serve),
    /// the rule of CMakeLists.txt's SKYCMD_MODULES.
    fn library_sources(src: &Path) -> Vec<PathBuf> {
        let mut files = Vec::new();
        let mut modules: Vec<PathBuf> = std::fs::read_dir(src).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_dir()).collect();
        modules.sort();
        for m in modules {
            let name = m.file_name().unwrap().to_string_lossy().to_string();
            if name == "cli" || name == "serve" {
                continue;
            }
            let mut c: Vec<PathBuf> =
                std::fs::read_dir(&m).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().map_or(false, |x| x == "c")).collect();
            c.sort();
            files.extend(c);
        }
        files
    }

    /// The SIMD kernel files; CMakeLists.txt gives them -falign-loops=64.
    const ALIGNED_LOOP_FILES: [&str; 3] = ["kernels/gemm_x86.c", "kernels/kernels_x86.c", "kernels/q8_x86.c"];

    struct Dep {
        include_paths: Vec<PathBuf>,
        defines: Vec<(String, Option<String>)>,
        /// (name, static?, search dir)
        libs: Vec<(String, bool, Option<PathBuf>)>,
    }

    /// A pkg-config dependency, each library linked statically when its archive exists.
    fn dep(module: &str, fallback_lib: &str, compiler: &Path) -> Dep {
        match pkg_config::Config::new().cargo_metadata(false).probe(module) {
            Ok(lib) => {
                let libs = lib
                    .libs
                    .iter()
                    .map(|name| match static_archive(name, &lib.link_paths, compiler) {
                        Some(dir) => (name.clone(), true, Some(dir)),
                        None => (name.clone(), false, lib.link_paths.first().cloned()),
                    })
                    .collect();
                Dep { include_paths: lib.include_paths, defines: lib.defines.into_iter().collect(), libs }
            }
            Err(e) => {
                println!("cargo:warning=skycmd-sys: pkg-config {module}: {e}; linking -l{fallback_lib} from the default paths");
                Dep { include_paths: Vec::new(), defines: Vec::new(), libs: vec![(fallback_lib.into(), false, None)] }
            }
        }
    }

    /// The directory of lib<name>.a: in the .pc's -L dirs, else where the C compiler finds it.
    fn static_archive(name: &str, dirs: &[PathBuf], compiler: &Path) -> Option<PathBuf> {
        let file = format!("lib{name}.a");
        if let Some(d) = dirs.iter().find(|d| d.join(&file).is_file()) {
            return Some(d.clone());
        }
        let out = Command::new(compiler).arg(format!("-print-file-name={file}")).output().ok()?;
        let p = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        // gcc and clang print the bare name when they find nothing.
        if p.is_absolute() && p.is_file() {
            p.parent().map(Path::to_path_buf)
        } else {
            None
        }
    }

    fn run(cmd: &mut Command) -> Result<(), String> {
        let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!("{cmd:?}: {}", String::from_utf8_lossy(&out.stderr).trim()))
        }
    }

    /// One relocatable object of every archive (partially linked by the C compiler driver,
    /// `cc -r`, so a cross compiler links for its target), its hidden symbols made local,
    /// archived as libskycmd.a.
    fn localize(out: &Path, archives: &[PathBuf], compiler: &cc::Tool, archiver: Command) -> Result<(), String> {
        let obj = out.join("skycmd-all.o");
        let mut ld = compiler.to_command();
        ld.args(["-r", "-nostdlib", "-o"]).arg(&obj).arg("-Wl,--whole-archive").args(archives).arg("-Wl,--no-whole-archive");
        run(&mut ld)?;
        let objcopy = env::var("SKYCMD_SYS_OBJCOPY").unwrap_or_else(|_| "objcopy".to_string());
        run(Command::new(objcopy).arg("--localize-hidden").arg(&obj))?;
        let lib = out.join("libskycmd.a");
        let _ = std::fs::remove_file(&lib);
        let mut ar = archiver;
        run(ar.arg("crs").arg(&lib).arg(&obj))
    }

    /// Mach-O (Apple targets): `cc -r` of the objects themselves (Apple's ld -r turns hidden
    /// symbols into local ones unless told -keep_private_externs, and takes no
    /// --whole-archive), archived as libskycmd.a.
    fn localize_macho(out: &Path, objects: &[PathBuf], compiler: &cc::Tool, archiver: Command) -> Result<(), String> {
        let obj = out.join("skycmd-all.o");
        let mut ld = compiler.to_command();
        ld.args(["-r", "-nostdlib", "-o"]).arg(&obj).args(objects);
        run(&mut ld)?;
        let lib = out.join("libskycmd.a");
        let _ = std::fs::remove_file(&lib);
        let mut ar = archiver;
        run(ar.arg("crs").arg(&lib).arg(&obj))
    }

    pub fn build() {
        let (root, commit) = sources();
        let src = root.join("src");
        let include = root.join("include");
        println!("cargo:rerun-if-changed={}", src.display());
        println!("cargo:rerun-if-changed={}", include.display());
        let out = PathBuf::from(env::var("OUT_DIR").unwrap());

        let mut base = cc::Build::new();
        let tool = base.get_compiler();
        let compiler = tool.path().to_path_buf();
        let cjson = dep("libcjson", "cjson", &compiler);
        let utf8proc = dep("libutf8proc", "utf8proc", &compiler);
        base.include(&include).include(&src);
        for d in [&cjson, &utf8proc] {
            for p in &d.include_paths {
                base.include(p);
            }
            for (k, v) in &d.defines {
                base.define(k, v.as_deref());
            }
        }
        base.flag("-std=c11")
            .opt_level(3)
            .define("NDEBUG", None)
            .define("SKYCMD_BUILD", None)
            .define("SKYCMD_GIT_COMMIT", format!("\"{commit}\"").as_str())
            .define("SKYCMD_BUILD_TYPE", "\"cargo-bundled\"")
            .flag_if_supported("-fvisibility=hidden")
            .flag_if_supported("-pthread")
            .cargo_metadata(false);
        // As CMakeLists.txt: macOS's headers read the sources' _POSIX_C_SOURCE as "hide the
        // rest" (O_NOFOLLOW, mkdtemp, ...); _DARWIN_C_SOURCE keeps the whole API visible.
        if env::var("CARGO_CFG_TARGET_VENDOR").map_or(false, |v| v == "apple") {
            base.define("_DARWIN_C_SOURCE", None);
        }

        let files = library_sources(&src);
        let aligned: Vec<PathBuf> = ALIGNED_LOOP_FILES.iter().map(|f| src.join(f)).collect();
        let mut kernels = base.clone();
        kernels.flag_if_supported("-falign-loops=64").files(files.iter().filter(|f| aligned.contains(f)));
        let mut rest = base.clone();
        rest.files(files.iter().filter(|f| !aligned.contains(f)));
        println!("cargo:rustc-link-search=native={}", out.display());
        if env::var("CARGO_CFG_TARGET_VENDOR").map_or(false, |v| v == "apple") {
            let mut objects = kernels.compile_intermediates();
            objects.extend(rest.compile_intermediates());
            if let Err(e) = localize_macho(&out, &objects, &tool, base.get_archiver()) {
                // Still correct, only the internal sk_* names stay global.
                println!("cargo:warning=skycmd-sys: could not localize the internal symbols ({e}); linking the plain objects");
                let lib = out.join("libskycmd.a");
                let _ = std::fs::remove_file(&lib);
                let mut ar = base.get_archiver();
                run(ar.arg("crs").arg(&lib).args(&objects)).unwrap_or_else(|e| panic!("skycmd-sys: {e}"));
            }
            println!("cargo:rustc-link-lib=static=skycmd");
            println!("cargo:rustc-env=SKYCMD_SYS_BUNDLED_ARCHIVE={}", out.join("libskycmd.a").display());
            link_dependencies(&cjson, &utf8proc, &include);
            return;
        }
        kernels.compile("skycmd_kernels");
        rest.compile("skycmd_rest");

        let archives = [out.join("libskycmd_kernels.a"), out.join("libskycmd_rest.a")];
        match localize(&out, &archives, &tool, base.get_archiver()) {
            Ok(()) => {
                println!("cargo:rustc-link-lib=static=skycmd");
                println!("cargo:rustc-env=SKYCMD_SYS_BUNDLED_ARCHIVE={}", out.join("libskycmd.a").display());
            }
            Err(e) => {
                // Still correct, only the internal sk_* names stay global.
                println!("cargo:warning=skycmd-sys: could not localize the internal symbols ({e}); linking the plain archives");
                println!("cargo:rustc-link-lib=static=skycmd_kernels");
                println!("cargo:rustc-link-lib=static=skycmd_rest");
            }
        }
        link_dependencies(&cjson, &utf8proc, &include);
    }

    /// cJSON, utf8proc and the C runtime's libraries after libskycmd; the metadata for
    /// dependents and the header test.
    fn link_dependencies(cjson: &Dep, utf8proc: &Dep, include: &Path) {
        for d in [utf8proc, cjson] {
            for (name, is_static, dir) in &d.libs {
                if let Some(dir) = dir {
                    println!("cargo:rustc-link-search=native={}", dir.display());
                }
                println!("cargo:rustc-link-lib={}={name}", if *is_static { "static" } else { "dylib" });
            }
        }
        println!("cargo:rustc-link-lib=dylib=m");
        println!("cargo:rustc-link-lib=dylib=pthread");
        println!("cargo:include={}", include.display());
        println!("cargo:bundled=1");
        println!("cargo:rustc-env=SKYCMD_CFLAGS=-I{}", include.display());
    }
}
