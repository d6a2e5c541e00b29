//! The fleet: dispatching missions to units, driving them, answering their
//! permission requests, and tearing them down when their mission comes to rest.

pub mod mission_tools;
