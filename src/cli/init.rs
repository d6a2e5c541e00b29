//! `missionboard init [--local] [--force] [--refresh-policies]`.

use std::path::Path;

use super::out::outln;
use super::{Ctx, InitArgs};
use crate::presets::{self, Mode, Outcome, Seeded};

pub(super) fn run(ctx: &Ctx, args: InitArgs) -> anyhow::Result<i32> {
    let mut seeded = Vec::new();
    if args.refresh_policies {
        seeded.extend(seed_into(
            &ctx.paths.home,
            Mode::RefreshPolicies {
                existing_only: false,
            },
        )?);
        if let Some(ws) = &ctx.paths.workspace {
            seeded.extend(seed_into(
                ws,
                Mode::RefreshPolicies {
                    existing_only: true,
                },
            )?);
        }
    } else {
        let mode = if args.force {
            Mode::Force
        } else {
            Mode::Upgrade
        };
        let dir = if args.local {
            ctx.paths.local_dir()
        } else {
            ctx.paths.home.clone()
        };
        seeded.extend(seed_into(&dir, mode)?);
    }
    // The board, doctor and every mission command share this file; create it now so
    // the first of them finds a ready store.
    ctx.store()?;

    let count = |f: fn(&Outcome) -> bool| seeded.iter().filter(|s| f(&s.outcome)).count();
    let skipped = count(|o| *o == Outcome::Skipped);
    outln!(
        "missionboard init: {} created, {} updated, {} up to date, {} skipped.",
        count(|o| *o == Outcome::Created),
        count(|o| matches!(o, Outcome::Updated | Outcome::Overwrote(_))),
        count(|o| *o == Outcome::UpToDate),
        skipped,
    )?;
    if skipped > 0 {
        outln!(
            "Skipped files were edited here and are kept as they are; 'missionboard init --force' overwrites them with this build's presets."
        )?;
    }
    outln!(
        "Next: 'missionboard vet --all' checks them, 'missionboard agent list' shows the agents you can fire at."
    )?;
    Ok(0)
}

fn seed_into(dir: &Path, mode: Mode) -> anyhow::Result<Vec<Seeded>> {
    outln!("Seeding {}:", dir.display())?;
    let seeded = presets::seed(dir, mode)?;
    for s in seeded.iter().filter(|s| s.outcome != Outcome::UpToDate) {
        outln!("{s}")?;
    }
    Ok(seeded)
}
