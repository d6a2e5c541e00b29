//! A WebDriver session on Debian's Chromium: `chromedriver` started on a loopback
//! port of its own, spoken to in the W3C WebDriver protocol (JSON over HTTP) by the
//! same HTTP client the web tests use. Only the commands the browser test needs.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use base64::Engine as _;
use reqwest::blocking::Client;
use serde_json::{Value, json};

use crate::harness::wait_for;

/// What to run when the browser or its driver is missing.
pub const INSTALL: &str = "apt-get install -y chromium chromium-driver";

/// The key W3C WebDriver names an element reference by.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// A browser session, ended (and its driver killed) when dropped.
pub struct Browser {
    driver: Child,
    client: Client,
    /// `http://127.0.0.1:PORT/session/ID`.
    session: String,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.client.delete(&self.session).send();
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// A program on PATH or at one of Debian's paths, or a failure naming the install.
fn program(name: &str, debian: &[&str]) -> String {
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(name))
            .find(|p| p.is_file())
    });
    on_path
        .map(|p| p.display().to_string())
        .or_else(|| {
            debian
                .iter()
                .find(|p| std::path::Path::new(p).is_file())
                .map(|p| p.to_string())
        })
        .unwrap_or_else(|| {
            panic!("the browser test drives Debian's Chromium over WebDriver, and `{name}` is not installed: run `{INSTALL}`")
        })
}

/// An element reference.
#[derive(Clone)]
pub struct Element(String);

impl Browser {
    /// Headless Chromium emulating a phone's screen of `width`x`height` CSS pixels.
    pub fn phone(width: u32, height: u32) -> Browser {
        let chromium = program("chromium", &["/usr/bin/chromium"]);
        let chromedriver = program("chromedriver", &["/usr/bin/chromedriver"]);
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free loopback port")
            .port();
        let driver = Command::new(&chromedriver)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {chromedriver}: {e} (`{INSTALL}`)"));
        let client = Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap();
        let base = format!("http://127.0.0.1:{port}");
        wait_for(30, "chromedriver to be ready", || {
            let status: Value = client
                .get(format!("{base}/status"))
                .send()
                .ok()?
                .json()
                .ok()?;
            status["value"]["ready"].as_bool().filter(|r| *r)
        });
        let mut args = vec!["--headless=new", "--disable-gpu", "--disable-dev-shm-usage"];
        // Chromium's own sandbox cannot start as root (CI runs as root).
        if unsafe { libc::geteuid() } == 0 {
            args.push("--no-sandbox");
        }
        let capabilities = json!({
            "capabilities": {"alwaysMatch": {
                "browserName": "chrome",
                // An alert a payload raised stays open, for the test to find.
                "unhandledPromptBehavior": "ignore",
                "goog:chromeOptions": {
                    "binary": chromium,
                    "args": args,
                    "mobileEmulation": {"deviceMetrics": {
                        "width": width, "height": height, "pixelRatio": 2.0, "touch": true
                    }}
                }
            }}
        });
        let mut browser = Browser {
            driver,
            client,
            session: String::new(),
        };
        let created = browser.call("POST", &format!("{base}/session"), Some(capabilities));
        let id = created["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("chromedriver started no session: {created}"));
        browser.session = format!("{base}/session/{id}");
        browser
    }

    /// One WebDriver command: its `value`, or a panic with the driver's error.
    fn call(&self, method: &str, url: &str, body: Option<Value>) -> Value {
        self.try_call(method, url, body)
            .unwrap_or_else(|e| panic!("WebDriver {method} {url}: {e}"))
    }

    /// One WebDriver command: its `value`, or the driver's error (`error: message`).
    fn try_call(&self, method: &str, url: &str, body: Option<Value>) -> Result<Value, String> {
        let req = match method {
            "GET" => self.client.get(url),
            "DELETE" => self.client.delete(url),
            _ => self
                .client
                .post(url)
                .json(&body.unwrap_or_else(|| json!({}))),
        };
        let response = req.send().map_err(|e| e.to_string())?;
        let ok = response.status().is_success();
        let v: Value = response.json().map_err(|e| e.to_string())?;
        if ok {
            Ok(v["value"].clone())
        } else {
            Err(format!(
                "{}: {}",
                v["value"]["error"].as_str().unwrap_or("?"),
                v["value"]["message"].as_str().unwrap_or("?")
            ))
        }
    }

    fn at(&self, path: &str) -> String {
        format!("{}{path}", self.session)
    }

    pub fn go(&self, url: &str) {
        self.call("POST", &self.at("/url"), Some(json!({ "url": url })));
    }

    pub fn url(&self) -> String {
        self.call("GET", &self.at("/url"), None)
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// Run `script` (a function body; `arguments` holds `args`) in the page.
    pub fn eval(&self, script: &str, args: Vec<Value>) -> Value {
        self.call(
            "POST",
            &self.at("/execute/sync"),
            Some(json!({ "script": script, "args": args })),
        )
    }

    /// The first element `css` selects, if any.
    pub fn find(&self, css: &str) -> Option<Element> {
        let found = self
            .try_call(
                "POST",
                &self.at("/element"),
                Some(json!({ "using": "css selector", "value": css })),
            )
            .ok()?;
        found[ELEMENT].as_str().map(|id| Element(id.to_string()))
    }

    /// Wait for `css` to select an element; past the deadline, fail showing where
    /// the browser is and what it shows.
    #[track_caller]
    pub fn wait_for(&self, secs: u64, what: &str, css: &str) -> Element {
        let found = missionboard::clock::poll_until_blocking(
            Duration::from_secs(secs),
            Duration::from_millis(50),
            || self.find(css),
        );
        match found {
            Some(e) => e,
            None => panic!(
                "timed out waiting for {what}: the browser is at {} showing {:?}",
                self.url(),
                self.eval(
                    "return document.body ? document.body.innerText : '';",
                    vec![]
                )
            ),
        }
    }

    pub fn type_into(&self, element: &Element, text: &str) {
        self.call(
            "POST",
            &self.at(&format!("/element/{}/value", element.0)),
            Some(json!({ "text": text })),
        );
    }

    pub fn click(&self, element: &Element) {
        self.call(
            "POST",
            &self.at(&format!("/element/{}/click", element.0)),
            None,
        );
    }

    pub fn text(&self, element: &Element) -> String {
        self.call(
            "GET",
            &self.at(&format!("/element/{}/text", element.0)),
            None,
        )
        .as_str()
        .unwrap_or_default()
        .to_string()
    }

    /// The text of an alert, confirm or prompt the page opened, if one is open.
    pub fn alert(&self) -> Option<String> {
        self.try_call("GET", &self.at("/alert/text"), None)
            .ok()
            .map(|v| v.as_str().unwrap_or_default().to_string())
    }

    /// The page as shown, as PNG.
    pub fn screenshot(&self) -> Vec<u8> {
        let b64 = self.call("GET", &self.at("/screenshot"), None);
        base64::engine::general_purpose::STANDARD
            .decode(b64.as_str().unwrap_or_default())
            .expect("a base64 PNG")
    }
}
