//! analyses
