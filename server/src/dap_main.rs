//! `csi-dap`: post-mortem debugging of a core dump over the Debug Adapter Protocol (stdio).

csi_dump::use_mimalloc!();

fn main() {
    if std::env::args().any(|a| a == "--version") {
        println!("csi-dap {}", env!("CARGO_PKG_VERSION"));
        return;
    }
    let stdin = std::io::stdin().lock();
    let stdout = std::io::stdout().lock();
    if let Err(e) = csi_lsp::dap::run(stdin, stdout) {
        eprintln!("csi-dap: {e}");
        std::process::exit(1);
    }
}
