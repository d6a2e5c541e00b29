//! Every layout number, named, with its reason. `update` (mouse hit-tests, page
//! sizes) and the views share these functions, so a click lands where the row is drawn.

use ratatui::layout::{Constraint, Direction, Layout, Rect};

/// The accessibility floor: every screen is designed (and snapshotted) at 80x24.
pub const MIN_WIDTH: u16 = 80;
pub const MIN_HEIGHT: u16 = 24;
/// From this width the board goes side by side (missions and detail left, the
/// attention panes right); below it the panes stack.
pub const WIDE_BREAKPOINT: u16 = 110;
/// Rows the missions table spends on chrome: two borders and the header.
pub const TABLE_CHROME: u16 = 3;
/// Rows a bordered list spends on its borders.
pub const LIST_CHROME: u16 = 2;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Areas {
    pub missions: Rect,
    pub detail: Rect,
    pub asks: Rect,
    pub inbox: Rect,
    pub trace: Rect,
    pub status: Rect,
}

pub fn too_small(area: Rect) -> bool {
    area.width < MIN_WIDTH || area.height < MIN_HEIGHT
}

pub fn areas(area: Rect) -> Areas {
    let [main, status] = Layout::vertical([Constraint::Fill(1), Constraint::Length(1)]).areas(area);
    if area.width >= WIDE_BREAKPOINT {
        let [left, right] =
            Layout::horizontal([Constraint::Percentage(60), Constraint::Percentage(40)])
                .areas(main);
        let [missions, detail] =
            Layout::vertical([Constraint::Percentage(50), Constraint::Fill(1)]).areas(left);
        let [asks, inbox, trace] = Layout::vertical([
            Constraint::Percentage(40),
            Constraint::Percentage(30),
            Constraint::Fill(1),
        ])
        .areas(right);
        Areas {
            missions,
            detail,
            asks,
            inbox,
            trace,
            status,
        }
    } else {
        // Stacked: the table on top, detail beside the asks, inbox beside the trace.
        let [top, middle, bottom] = Layout::vertical([
            Constraint::Percentage(36),
            Constraint::Fill(1),
            Constraint::Length(6),
        ])
        .areas(main);
        let [detail, asks] = Layout::default()
            .direction(Direction::Horizontal)
            .constraints([Constraint::Percentage(55), Constraint::Fill(1)])
            .areas(middle);
        let [inbox, trace] =
            Layout::horizontal([Constraint::Percentage(55), Constraint::Fill(1)]).areas(bottom);
        Areas {
            missions: top,
            detail,
            asks,
            inbox,
            trace,
            status,
        }
    }
}

/// How many mission rows fit: the page the store thread is asked for.
/// How many schedules the schedules panel shows in `area`: one each, two lines
/// apiece, inside its border and under its header line and its count line.
pub fn schedule_rows(area: Rect) -> usize {
    (schedules_rect(area).height.saturating_sub(4) / 2).max(1) as usize
}

/// Where the schedules panel is drawn.
pub fn schedules_rect(area: Rect) -> Rect {
    centered(
        area,
        area.width.saturating_sub(4).min(120),
        area.height.saturating_sub(2),
    )
}

pub fn mission_rows(area: Rect) -> usize {
    if too_small(area) {
        return 1;
    }
    areas(area)
        .missions
        .height
        .saturating_sub(TABLE_CHROME)
        .max(1) as usize
}

/// The items a bordered list of `height` rows shows with `selected` in view: it
/// scrolls only once the selection passes its last row.
pub fn list_window(selected: usize, len: usize, height: u16) -> std::ops::Range<usize> {
    let rows = height.saturating_sub(LIST_CHROME) as usize;
    let first = selected.saturating_sub(rows.saturating_sub(1));
    first.min(len)..(first + rows).min(len)
}

/// A centred box of at most `w` x `h` inside `area`.
pub fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panes_fit_at_the_floor_and_wide() {
        for (w, h) in [(80, 24), (120, 40), (200, 60)] {
            let a = areas(Rect::new(0, 0, w, h));
            for r in [a.missions, a.detail, a.asks, a.inbox, a.trace] {
                assert!(r.width >= 20 && r.height >= 4, "{w}x{h}: {r:?}");
            }
            assert_eq!(a.status.height, 1);
        }
        assert!(mission_rows(Rect::new(0, 0, 80, 24)) >= 4);
    }

    #[test]
    fn a_list_window_keeps_the_selection_on_its_last_row_and_never_overruns() {
        // Six rows between the borders.
        assert_eq!(list_window(0, 20, 8), 0..6);
        assert_eq!(list_window(5, 20, 8), 0..6);
        assert_eq!(list_window(6, 20, 8), 1..7);
        assert_eq!(list_window(19, 20, 8), 14..20);
        assert_eq!(list_window(0, 3, 8), 0..3);
        assert_eq!(list_window(0, 0, 8), 0..0);
        assert_eq!(list_window(4, 10, 2), 4..4, "no room, no rows");
    }
}
