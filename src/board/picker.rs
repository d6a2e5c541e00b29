//! The `/mission` picker on the board: its words are every surface's
//! ([`crate::ops::picker`]); the board says its own fire line.

pub use crate::ops::fire::{
    EnvelopeEntry, LABEL_SEP, MissionLine, ParamEntry, PickerData, Resolved, TemplateEntry, USAGE,
    bound_labels, lookup_envelope, parse, resolve,
};
pub use crate::ops::picker::*;

/// A refusal of the grammar as the board says it: its fire line is `:mission` (`/` is
/// the board's filter), an editor session's `/mission`.
pub fn on_board(refusal: String) -> String {
    refusal.replace("/mission", ":mission")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_board_s_refusals_point_at_its_own_fire_line() {
        let data = PickerData::default();
        let refusals = [
            parse("--wait go", |_| false).unwrap_err(),
            parse("--policy", |_| false).unwrap_err(),
            resolve(None, None, "go".into(), &data).unwrap_err(),
        ];
        for refusal in refusals {
            assert!(refusal.contains("/mission"), "{refusal}");
            let said = on_board(refusal);
            assert!(
                said.contains(":mission") && !said.contains("/mission"),
                "{said}"
            );
        }
    }
}
