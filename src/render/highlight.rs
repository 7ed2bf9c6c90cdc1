//! Code highlighting.
