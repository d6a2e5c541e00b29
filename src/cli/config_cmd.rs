//! `missionboard config set|get|list|unset`.

use super::out::{self, out, outln};
use super::{ConfigCmd, Ctx};
use crate::config::{Config, Origin};
use crate::row;

pub(super) fn run(ctx: &Ctx, cmd: ConfigCmd) -> anyhow::Result<i32> {
    // Validate the key before touching the database, so a typo creates nothing.
    let key_name = match &cmd {
        ConfigCmd::Set { key, .. } | ConfigCmd::Get { key } | ConfigCmd::Unset { key } => {
            Some(key.as_str())
        }
        ConfigCmd::List => None,
    };
    if let Some(k) = key_name {
        crate::config::key(k).map_err(anyhow::Error::msg)?;
    }
    let config = Config::new(ctx.store()?);
    match cmd {
        ConfigCmd::Set { key, value } => {
            let stored = config.set(&key, &value)?;
            outln!("{key} = {stored}")?;
        }
        ConfigCmd::Get { key } => match config.get(&key)? {
            Some(v) => outln!("{v}")?,
            None => out::notice(&format!(
                "{key} is not set — set it with `missionboard config set {key} <value>`"
            )),
        },
        ConfigCmd::Unset { key } => {
            config.unset(&key)?;
            match config.get(&key)? {
                Some(d) => outln!("{key} unset (default: {d})")?,
                None => outln!("{key} unset")?,
            }
        }
        ConfigCmd::List => {
            let mut rows = vec![row!["KEY", "VALUE", "ORIGIN", "MEANING"]];
            for (key, value, origin) in config.list()? {
                let origin = match origin {
                    Origin::Set => "set",
                    Origin::Default => "default",
                    Origin::Unset => "unset",
                };
                rows.push(row![
                    key.name,
                    value.unwrap_or_else(|| "-".into()),
                    origin,
                    key.help
                ]);
            }
            out!("{}", crate::table::render(&rows))?;
        }
    }
    Ok(0)
}
