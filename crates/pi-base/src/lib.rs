//! The ground every other pi crate stands on, each mechanism written once: the validating
//! JSON scanner that hands out byte spans ([`json`]), JavaScript's ways with numbers and
//! strings ([`js`]), the clock and random ids ([`clock`], [`ids`]), private, atomic and
//! locked files ([`fs`]), ordered parallel maps ([`par`]), where things live and the
//! settings files ([`config`], checked by [`settings_schema`]), and one-line text cuts
//! ([`text`]).
//!
//! Nothing here knows sessions, models or terminals.

pub mod clock;
pub mod config;
pub mod fs;
pub mod ids;
pub mod js;
pub mod json;
pub mod par;
pub mod settings_schema;
pub mod text;
