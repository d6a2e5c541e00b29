//! `missionboard config set|get|list|unset`.

use super::out::{self, out, outln};
use super::{ConfigCmd, Ctx};
use crate::config::{Config, Key, Origin, STORE_URL};
use crate::row;

pub(super) fn run(ctx: &Ctx, cmd: ConfigCmd) -> anyhow::Result<i32> {
    // Validate the key before touching the database, so a typo creates nothing.
    let key_name = match &cmd {
        ConfigCmd::Set { key, .. } | ConfigCmd::Get { key } | ConfigCmd::Unset { key } => {
            Some(key.as_str())
        }
        ConfigCmd::List { .. } => None,
    };
    if let Some(k) = key_name {
        crate::config::key(k).map_err(anyhow::Error::msg)?;
    }
    match cmd {
        ConfigCmd::Set { key, value } => {
            let value = if key == STORE_URL && value == "-" {
                url_from_stdin()?
            } else {
                value
            };
            let stored = Config::new(store_for(ctx, &key)?).set(&key, &value)?;
            outln!("{key} = {}", shown(&key, stored))?;
        }
        ConfigCmd::Get { key } => match effective(ctx, key != STORE_URL)?
            .into_iter()
            .find(|(k, ..)| k.name == key)
        {
            Some((_, Some(v), _)) => outln!("{}", shown(&key, v))?,
            _ => out::notice(&format!(
                "{key} is not set — set it with `missionboard config set {key} <value>`"
            )),
        },
        ConfigCmd::Unset { key } => {
            let config = Config::new(store_for(ctx, &key)?);
            config.unset(&key)?;
            match config.get(&key)? {
                Some(d) => outln!("{key} unset (default: {d})")?,
                None => outln!("{key} unset")?,
            }
        }
        ConfigCmd::List { json } => {
            let mut entries = effective(ctx, true)?;
            for (key, value, _) in &mut entries {
                *value = value.take().map(|v| shown(key.name, v));
            }
            let origin = |o: Origin| match o {
                Origin::Set => "set",
                Origin::Default => "default",
                Origin::Unset => "unset",
                Origin::Env => "env",
            };
            if json {
                let keys: Vec<_> = entries
                    .iter()
                    .map(|(key, value, o)| {
                        serde_json::json!({
                            "key": key.name,
                            "value": value,
                            "origin": origin(*o),
                            "meaning": key.help,
                        })
                    })
                    .collect();
                out::json(&keys)?;
                return Ok(0);
            }
            let mut rows = vec![row!["KEY", "VALUE", "ORIGIN", "MEANING"]];
            for (key, value, o) in entries {
                rows.push(row![
                    key.name,
                    // A repeatable key's entries, one a line in the store, on one row.
                    value.map_or_else(|| "-".into(), |v| v.replace('\n', "; ")),
                    origin(o),
                    key.help
                ]);
            }
            out!("{}", crate::table::render(&rows))?;
        }
    }
    Ok(0)
}

/// `config set store-url -`: the URL from standard input's first line, so a password
/// in it reaches neither `ps` nor the shell's history.
fn url_from_stdin() -> anyhow::Result<String> {
    let mut line = String::new();
    std::io::stdin().read_line(&mut line)?;
    let url = line.trim().to_string();
    anyhow::ensure!(
        !url.is_empty(),
        "no store-url on standard input — pipe it in, e.g. `missionboard config set store-url - < url-file`"
    );
    Ok(url)
}

/// A value as printed: a `store-url`'s password never reaches the terminal (or a
/// log a pasted listing lands in).
fn shown(key: &str, value: String) -> String {
    if key == STORE_URL {
        crate::store::pg_connect::redact(&value)
    } else {
        value
    }
}

/// Where `key` is kept: `store-url` in this home's own file (it says where the rest
/// lives), every other key in the store it names.
fn store_for(ctx: &Ctx, key: &str) -> anyhow::Result<crate::store::Store> {
    if key == STORE_URL {
        ctx.home_file_store()
    } else {
        ctx.store()
    }
}

/// Every key's effective value: from the store (when `read_store`), or — where there
/// is none yet, or it cannot be reached — the defaults, without creating one;
/// `store-url` from `MISSIONBOARD_STORE_URL` when it is set (the store every command
/// uses), else from this home's own file. An unreachable shared store is said on
/// stderr, so the operator can still see and fix the `store-url` that names it.
fn effective(
    ctx: &Ctx,
    read_store: bool,
) -> anyhow::Result<Vec<(&'static Key, Option<String>, Origin)>> {
    let defaults = |keys: &[&'static Key]| -> Vec<(&'static Key, Option<String>, Origin)> {
        keys.iter()
            .map(|k| {
                let (value, origin) = k.effective(None);
                (*k, value, origin)
            })
            .collect()
    };
    let all: Vec<&'static Key> = crate::config::KEYS.iter().collect();
    let unreachable = |e: &anyhow::Error| {
        e.downcast_ref::<crate::store::StoreError>()
            .is_some_and(crate::store::StoreError::is_unreachable)
    };
    let mut entries = match read_store.then(|| ctx.existing_store()) {
        Some(Ok(Some(store))) => Config::new(store).list()?,
        Some(Err(e)) if unreachable(&e) => {
            out::notice(&format!(
                "the shared store is unreachable, so this shows the defaults for every other key: {e:#}"
            ));
            defaults(&all)
        }
        Some(Err(e)) => return Err(e),
        Some(Ok(None)) | None => defaults(&all),
    };
    let home = match crate::store::Store::open_read_only(&ctx.paths.db_path())? {
        Some(file) => Config::new(file).list()?,
        None => defaults(&all),
    };
    let from_env = crate::config::store_url_from_env();
    for entry in entries.iter_mut().filter(|(k, ..)| k.name == STORE_URL) {
        if let Some(url) = &from_env {
            entry.1 = Some(url.to_string_lossy().into_owned());
            entry.2 = Origin::Env;
        } else if let Some(local) = home.iter().find(|(k, ..)| k.name == STORE_URL) {
            *entry = local.clone();
        }
    }
    Ok(entries)
}
