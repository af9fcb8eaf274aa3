fn main() {
    let prefix = std::env::var("LLVM_SYS_191_PREFIX").unwrap_or_else(|_| "/usr/lib/llvm-19".into());
    println!("cargo:rerun-if-changed=shim/shim.cpp");
    println!("cargo:rerun-if-env-changed=LLVM_SYS_191_PREFIX");
    cc::Build::new()
        .cpp(true)
        .file("shim/shim.cpp")
        .include(format!("{prefix}/include"))
        .flag("-std=c++17")
        .flag("-fno-exceptions")
        .flag("-fno-rtti")
        .flag("-D__STDC_CONSTANT_MACROS")
        .flag("-D__STDC_FORMAT_MACROS")
        .flag("-D__STDC_LIMIT_MACROS")
        .warnings(false)
        .compile("csi_shim");
    link_cxx_driver();
    compile_runtime();
}

/// The runtime csi-cc links into every instrumented unit (runtime/coverage_out.c), as LLVM
/// bitcode for `include_bytes!`. Compiled by the clang that matches the LLVM csi-cc links.
fn compile_runtime() {
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let clang = std::env::var("CSI_CLANG").unwrap_or_else(|_| "clang-19".into());
    println!("cargo:rerun-if-changed=runtime/coverage_out.c");
    println!("cargo:rerun-if-env-changed=CSI_CLANG");
    let status = std::process::Command::new(&clang)
        .args([
            "-c",
            "-emit-llvm",
            "-O2",
            "-fPIC",
            "-fno-stack-protector",
            "-Wall",
            "-Werror",
        ])
        .arg("runtime/coverage_out.c")
        .arg("-o")
        .arg(out.join("coverage_out.bc"))
        .status()
        .unwrap_or_else(|e| panic!("cannot run {clang} for runtime/coverage_out.c: {e}"));
    assert!(status.success(), "{clang} failed on runtime/coverage_out.c");
}

/// `csi-c++` next to `csi-cc` in the profile directory (target/release): a relative symlink
/// to it, since csi-cc is the C++ driver when its name contains `++` and cargo cannot name a
/// binary `csi-c++` (a crate name). OUT_DIR is `<profile>/build/csi-cc-<hash>/out`.
fn link_cxx_driver() {
    let Some(out) = std::env::var_os("OUT_DIR") else {
        return;
    };
    let Some(profile) = std::path::Path::new(&out).ancestors().nth(3) else {
        return;
    };
    let link = profile.join("csi-c++");
    if std::fs::symlink_metadata(&link).is_err() {
        #[cfg(unix)]
        if let Err(e) = std::os::unix::fs::symlink("csi-cc", &link) {
            println!("cargo:warning=cannot create {}: {e}", link.display());
        }
    }
}
