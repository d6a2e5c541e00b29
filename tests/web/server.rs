//! A `missionboard web` of a sandbox, and a client that speaks to it as a paired
//! (or unpaired) browser would.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};

use reqwest::blocking::{Client, Response};

use crate::harness::Sandbox;

/// The server, killed when dropped.
pub struct Web {
    child: Child,
    /// `http` or `https`.
    pub scheme: String,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    pub client: Client,
}

impl Drop for Web {
    fn drop(&mut self) {
        crate::harness::end_leftover(&mut self.child);
    }
}

/// A client that follows no redirects and keeps no cookies of its own: each test
/// says what it sends.
pub fn client() -> Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

impl Web {
    /// `missionboard web --listen 127.0.0.1:0` plus `extra`, started and listening.
    pub fn start(sb: &Sandbox, extra: &[&str]) -> Web {
        let mut args = vec!["web", "--listen", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        Web::start_command(sb, &args)
    }

    /// The page as `args` (a `missionboard` command line) serves it: its first line
    /// of output names the address.
    pub fn start_command(sb: &Sandbox, args: &[&str]) -> Web {
        let mut child = sb
            .command(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn missionboard web");
        // The banner's first line names the address; the rest is drained so the
        // server never writes into a full pipe.
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            let _ = tx.send(lines.next().and_then(Result::ok).unwrap_or_default());
            for _ in lines {}
        });
        let first = rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("missionboard web printed its address");
        let (scheme, addr) = first
            .trim()
            .strip_prefix("missionboard web: listening on ")
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|url| url.split_once("://"))
            .unwrap_or_else(|| panic!("no listening line: {first:?}"));
        Web {
            scheme: scheme.to_string(),
            addr: addr.to_string(),
            child,
            client: client(),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}://{}{path}", self.scheme, self.addr)
    }

    pub fn origin(&self) -> String {
        format!("{}://{}", self.scheme, self.addr)
    }

    /// GET `path` with the device's cookie (if any).
    pub fn get(&self, path: &str, credential: Option<&str>) -> Response {
        let mut req = self.client.get(self.url(path));
        if let Some(c) = credential {
            req = req.header("Cookie", format!("mb_device={c}"));
        }
        req.send().unwrap()
    }

    /// POST a form to `path` from our own origin with the device's cookie.
    pub fn post(&self, path: &str, credential: Option<&str>, form: &[(&str, &str)]) -> Response {
        let mut req = self
            .client
            .post(self.url(path))
            .header("Origin", self.origin())
            .form(form);
        if let Some(c) = credential {
            req = req.header("Cookie", format!("mb_device={c}"));
        }
        req.send().unwrap()
    }

    /// Pair a device called `name` through `web pair`'s link: the credential its
    /// cookie carries.
    pub fn pair(&self, sb: &Sandbox, name: &str) -> String {
        let code = pairing_code(sb, name);
        let r = self.post("/api/pair", None, &[("code", &code)]);
        assert_eq!(r.status(), 200, "{:?}", r.text());
        cookie_value(&r).expect("a device cookie")
    }

    /// The CSRF token the main page carries for this device.
    pub fn csrf(&self, credential: &str) -> String {
        let page = self.get("/", Some(credential)).text().unwrap();
        const META: &str = "<meta name=\"csrf\" content=\"";
        let at = page.find(META).expect("a csrf meta") + META.len();
        page[at..at + 32].to_string()
    }

    /// Answer ask `id` from the page (`verdict`: answer, approve or deny).
    pub fn answer(&self, credential: &str, id: &str, verdict: &str, text: &str) -> Response {
        let csrf = self.csrf(credential);
        self.post(
            "/api/answer",
            Some(credential),
            &[
                ("csrf", &csrf),
                ("ask", id),
                ("verdict", verdict),
                ("text", text),
            ],
        )
    }
}

/// `web pair --name <name>`: the one-time code from the link's fragment.
pub fn pairing_code(sb: &Sandbox, name: &str) -> String {
    let out = sb.run(&["web", "pair", "--name", name]).ok();
    pairing_link(&out.stdout)
        .split_once("/pair#")
        .unwrap()
        .1
        .to_string()
}

/// The link line of `web pair`'s output.
pub fn pairing_link(stdout: &str) -> String {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("  http"))
        .map(|rest| format!("http{rest}"))
        .unwrap_or_else(|| panic!("no link in {stdout}"))
}

/// The device credential a response sets.
pub fn cookie_value(r: &Response) -> Option<String> {
    let set = r.headers().get("set-cookie")?.to_str().ok()?;
    let (pair, _) = set.split_once(';')?;
    pair.strip_prefix("mb_device=").map(str::to_string)
}
