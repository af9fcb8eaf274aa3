//! The views layer of CSI, under the command line (`csi`) and the editor (`csi-lsp`,
//! `csi-dap`), as rust-analyzer's `ide` crate is under its LSP server: an opened crash as
//! plain data ([`session`]), what a front end shows of it ([`views`]), and the one home of
//! node → source locations ([`location`]), function spans with their must / may / never
//! counts ([`functions`]) and source-file resolution ([`source`]). No LSP types, no terminal
//! output, no async runtime.

pub mod function_spans;
pub mod functions;
pub mod location;
pub mod session;
pub mod source;
pub mod views;

pub use functions::{FunctionView, LineCounts, SpanLines};
pub use session::{FrameView, Selection, Session, ShownSlice, ThreadView};
pub use source::{SourcePaths, SubstitutePath, WorkspaceIndex};
