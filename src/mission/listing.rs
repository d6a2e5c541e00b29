//! Reading missions in pages: newest first, by agent, by id, and the board's sorted
//! listing, each read one LIMITed range of an index; and the exact counts it pages by.

use serde_json::json;

use super::{Mission, Missions, Result, Status, status_count};
use crate::store::sql::params;

/// How a [`Listing`] orders missions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Order {
    /// Open first, then queued, stuck, derailed, abandoned and landed; newest first
    /// in each.
    #[default]
    State,
    /// Newest first.
    Age,
    /// Most recently heard from (heartbeat, else creation) first.
    Heartbeat,
}

impl Order {
    /// The order the board's sort key moves to next.
    pub fn next(self) -> Order {
        match self {
            Order::State => Order::Age,
            Order::Age => Order::Heartbeat,
            Order::Heartbeat => Order::State,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Order::State => "state",
            Order::Age => "age",
            Order::Heartbeat => "heartbeat",
        }
    }
}

/// The states in [`Order::State`] order: live work, what waits its turn, then what
/// went wrong, then done.
const STATE_ORDER: [Status; 6] = [
    Status::Open,
    Status::Queued,
    Status::Stuck,
    Status::Derailed,
    Status::Abandoned,
    Status::Landed,
];

/// Which missions a sorted listing covers, and how it orders them.
#[derive(Debug, Clone, Copy)]
pub struct Listing<'a> {
    pub order: Order,
    /// Live missions only, open and queued (the terminal ones hidden).
    pub open_only: bool,
    /// Missions shown elsewhere (the board's needs-me group), left out.
    pub exclude: &'a [Mission],
}

impl Listing<'_> {
    fn statuses(&self) -> &'static [Status] {
        if self.open_only {
            &STATE_ORDER[..2]
        } else {
            &STATE_ORDER
        }
    }
}

impl Missions {
    /// Missions newest first.
    pub fn list(&self, limit: usize) -> Result<Vec<Mission>> {
        self.query(
            "ORDER BY created_at DESC, id DESC LIMIT ?1",
            params![limit as i64],
        )
    }

    /// `agent`'s newest missions, newest first.
    pub fn newest_of_agent(&self, agent: &str, limit: usize) -> Result<Vec<Mission>> {
        self.query(
            "WHERE agent_name = ?1 ORDER BY created_at DESC, id DESC LIMIT ?2",
            params![agent, limit as i64],
        )
    }

    /// One page of missions, newest first: what a scrolled view shows, and no more.
    pub fn list_page(&self, offset: usize, limit: usize) -> Result<Vec<Mission>> {
        self.query(
            "ORDER BY created_at DESC, id DESC LIMIT ?1 OFFSET ?2",
            params![limit as i64, offset as i64],
        )
    }

    /// Missions by exact id (those that exist), in no particular order.
    pub fn get_many(&self, ids: &[String]) -> Result<Vec<Mission>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        self.query(
            "WHERE id IN (SELECT value FROM json_each(?1))",
            params![json!(ids).to_string()],
        )
    }

    /// How many missions `listing` covers, given [`Missions::counts`].
    pub fn listing_len(&self, listing: &Listing<'_>, (total, open): (i64, i64)) -> usize {
        let in_scope = if listing.open_only {
            open + self.count_in(Status::Queued).unwrap_or(0) as i64
        } else {
            total
        };
        let excluded = listing
            .exclude
            .iter()
            .filter(|m| !listing.open_only || !m.status.is_terminal())
            .count();
        (in_scope.max(0) as usize).saturating_sub(excluded)
    }

    /// One page of `listing`: each read is a range of an index, LIMITed, so a
    /// scrolled view costs its rows, not the table. By state, a state is counted
    /// only when the page starts past it (the first pages count nothing but open).
    pub fn listing_page(
        &self,
        listing: &Listing<'_>,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<Mission>> {
        let exclude = json!(listing.exclude.iter().map(|m| &m.id).collect::<Vec<_>>()).to_string();
        let not_excluded = "id NOT IN (SELECT value FROM json_each(?1))";
        let order = match listing.order {
            Order::State => {
                let mut out = Vec::new();
                let mut skip = offset;
                for &st in listing.statuses() {
                    if out.len() >= limit {
                        break;
                    }
                    if skip > 0 {
                        let n = self.count_in(st)?.saturating_sub(
                            listing.exclude.iter().filter(|m| m.status == st).count(),
                        );
                        if skip >= n {
                            skip -= n;
                            continue;
                        }
                    }
                    out.extend(self.query(
                        &format!(
                            "WHERE status = ?4 AND {not_excluded} ORDER BY created_at DESC, id DESC LIMIT ?2 OFFSET ?3"
                        ),
                        params![exclude, (limit - out.len()) as i64, skip as i64, st.as_str()],
                    )?);
                    skip = 0;
                }
                return Ok(out);
            }
            Order::Age => "created_at DESC, id DESC",
            // Open only: the open rows (few) are found by status and sorted; all
            // of them: the activity index is read in order.
            Order::Heartbeat if listing.open_only => {
                "+MAX(created_at, COALESCE(last_heartbeat, 0)) DESC, id DESC"
            }
            Order::Heartbeat => "MAX(created_at, COALESCE(last_heartbeat, 0)) DESC, id DESC",
        };
        let scope = if listing.open_only {
            "status IN ('open', 'queued') AND "
        } else {
            ""
        };
        self.query(
            &format!("WHERE {scope}{not_excluded} ORDER BY {order} LIMIT ?2 OFFSET ?3"),
            params![exclude, limit as i64, offset as i64],
        )
    }

    /// How many missions rest in `status`: one row of the trigger-kept counts.
    fn count_in(&self, status: Status) -> Result<usize> {
        Ok(self.store.with(|c| status_count(c, status))?.max(0) as usize)
    }

    /// How many missions there are, and how many of them are open. Missions are
    /// never deleted and SQLite gives each new row the next rowid, so the highest
    /// rowid is the total — one index probe instead of a scan of every row; the open
    /// count is one row of the trigger-kept counts.
    pub fn counts(&self) -> Result<(i64, i64)> {
        Ok(self.store.with(|c| {
            let total = c
                .prepare_cached("SELECT COALESCE(MAX(rowid), 0) FROM missions")?
                .query_row([], |r| r.get(0))?;
            Ok((total, status_count(c, Status::Open)?))
        })?)
    }
}
