//! opencode: to come.
