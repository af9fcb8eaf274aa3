//! `csi-lsp` over stdio.

csi_dump::use_mimalloc!();

#[tokio::main]
async fn main() {
    if std::env::args().any(|a| a == "--version") {
        println!("csi-lsp {}", env!("CARGO_PKG_VERSION"));
        return;
    }
    let (service, socket) = csi_lsp::service();
    tower_lsp_server::Server::new(tokio::io::stdin(), tokio::io::stdout(), socket)
        .serve(service)
        .await;
}
