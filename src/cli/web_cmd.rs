//! `missionboard web [--listen ADDR]`, `web pair`, `web devices`, `web revoke`.

use super::out::{self, outln};
use super::{Ctx, WebArgs, WebCmd};
use crate::ops::devices;
use crate::row;

pub(super) fn run(ctx: &Ctx, args: WebArgs) -> anyhow::Result<i32> {
    match args.command {
        None => serve(ctx, args),
        Some(WebCmd::Pair { name, url }) => pair(ctx, name.as_deref(), url.as_deref()),
        Some(WebCmd::Devices { json }) => list(ctx, json),
        Some(WebCmd::Revoke { name }) => revoke(ctx, &name),
    }
}

fn serve(ctx: &Ctx, args: WebArgs) -> anyhow::Result<i32> {
    let tls = match (args.tls_cert, args.tls_key) {
        (Some(cert), Some(key)) => Some((cert, key)),
        (None, None) => None,
        _ => anyhow::bail!(
            "--tls-cert and --tls-key go together: the certificate chain and its key, both PEM"
        ),
    };
    let store = ctx.store()?;
    let server = crate::web::Server::bind(
        ctx.paths.clone(),
        store,
        crate::web::WebOptions {
            listen: args.listen,
            tls,
            behind_proxy: args.behind_proxy,
            allowed_hosts: args.allowed_hosts,
        },
    )?;
    for line in server.banner() {
        outln!("{line}")?;
    }
    crate::runtime::multi_thread()?.block_on(server.run())?;
    Ok(0)
}

fn pair(ctx: &Ctx, name: Option<&str>, url: Option<&str>) -> anyhow::Result<i32> {
    let store = ctx.store()?;
    let base = match url {
        Some(u) => {
            let u = u.trim().trim_end_matches('/');
            if !(u.starts_with("http://") || u.starts_with("https://")) {
                anyhow::bail!(
                    "--url {u:?} is not a web address: give the page's base, e.g. https://laptop.tailnet.ts.net"
                );
            }
            u.to_string()
        }
        None => crate::web::recorded_url(&ctx.paths)
            .unwrap_or_else(|| format!("http://{}", crate::web::DEFAULT_LISTEN)),
    };
    let pairing = devices::pair(&ctx.host(&store)?, name)?;
    let link = format!("{base}/pair#{}", pairing.code);
    outln!(
        "Open this link on the device to pair it as {:?} — once, within {} minutes:",
        pairing.name,
        crate::devices::PAIRING_TTL.as_secs() / 60
    )?;
    outln!("  {link}")?;
    outln!()?;
    outln!("{}", crate::web::qr_text(&link)?)?;
    outln!(
        "The code is the part after '#': a browser never sends it in a request of its own. Anyone holding the link can pair once, so share it only with the device."
    )?;
    Ok(0)
}

fn list(ctx: &Ctx, json: bool) -> anyhow::Result<i32> {
    let devices = match ctx.existing_store()? {
        Some(store) => crate::devices::Devices::new(store).list()?,
        None => Vec::new(),
    };
    if json {
        out::json(&serde_json::json!({ "devices": devices }))?;
        return Ok(0);
    }
    if devices.is_empty() {
        outln!("No paired devices. Pair one with 'missionboard web pair --name phone'.")?;
        return Ok(0);
    }
    let now = crate::clock::now_ms();
    let mut rows = vec![row!["NAME", "PAIRED", "LAST SEEN", "EXPIRES"]];
    for d in &devices {
        rows.push(row![
            d.name,
            crate::clock::rfc3339(d.created_at),
            format!(
                "{} ago",
                crate::duration::age(crate::clock::age_secs(d.last_seen_at))
            ),
            if d.expires_at <= now {
                "expired".to_string()
            } else {
                crate::clock::rfc3339(d.expires_at)
            }
        ]);
    }
    out::text(&crate::table::render(&rows))?;
    Ok(0)
}

fn revoke(ctx: &Ctx, name: &str) -> anyhow::Result<i32> {
    let store = ctx.required_store()?;
    devices::revoke(&ctx.host(&store)?, name)?;
    outln!(
        "Device {:?} is revoked: its next request is refused. Pair it again with 'missionboard web pair --name {}'.",
        name.trim(),
        name.trim()
    )?;
    Ok(0)
}
