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
