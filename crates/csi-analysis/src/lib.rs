//! CSI's post-mortem analyses (DESIGN §6): plain data in, plain data out, no I/O.

pub mod utl;
