//! qwen: to come.
