//! HTML export (see below).
