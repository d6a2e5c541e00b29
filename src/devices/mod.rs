//! Paired devices of the web surface: the one-time pairing codes `web pair` mints
//! and the device credentials a pairing is exchanged for. Both are secrets, so the
//! store holds neither: only their SHA-256, which is what a presented secret is
//! looked up by. A code is spent by one guarded write (it pairs exactly one device);
//! a credential is live while its device row exists, was seen within the sliding
//! window and is younger than the absolute limit.

use std::fmt;
use std::time::Duration;

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::clock;
use crate::store::sql::{OptionalExtension, params};
use crate::store::{Store, StoreError};

pub(crate) const SCHEMA_V14: &str = "
CREATE TABLE web_pairings (
    code_hash   TEXT PRIMARY KEY NOT NULL,
    device_name TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    used_at     INTEGER
);
CREATE TABLE web_devices (
    name         TEXT PRIMARY KEY NOT NULL,
    token_hash   TEXT NOT NULL UNIQUE,
    created_at   INTEGER NOT NULL,
    last_seen_at INTEGER NOT NULL
);";

pub(crate) const PG_SCHEMA_V14: &str = "
CREATE TABLE web_pairings (
    code_hash   TEXT PRIMARY KEY NOT NULL,
    device_name TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL,
    used_at     BIGINT
);
CREATE TABLE web_devices (
    name         TEXT PRIMARY KEY NOT NULL,
    token_hash   TEXT NOT NULL UNIQUE,
    created_at   BIGINT NOT NULL,
    last_seen_at BIGINT NOT NULL
);";

/// How long a pairing code can be redeemed.
pub const PAIRING_TTL: Duration = Duration::from_secs(10 * 60);
/// A credential unused this long stops working (each use slides it).
pub const SLIDING: Duration = Duration::from_secs(30 * 24 * 3600);
/// A credential stops working this long after its pairing, used or not.
pub const ABSOLUTE: Duration = Duration::from_secs(90 * 24 * 3600);
/// Last-seen is written at most this often per device (not on every request).
const SEEN_EVERY_MS: i64 = 60_000;

/// A paired device as listed (`web devices`): never its credential.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Device {
    pub name: String,
    #[serde(serialize_with = "clock::ser_rfc3339")]
    pub created_at: i64,
    #[serde(serialize_with = "clock::ser_rfc3339")]
    pub last_seen_at: i64,
    /// When it stops working unless used again (the sliding or the absolute limit).
    #[serde(serialize_with = "clock::ser_rfc3339")]
    pub expires_at: i64,
}

impl Device {
    fn expiry(created_at: i64, last_seen_at: i64) -> i64 {
        (last_seen_at + ms(SLIDING)).min(created_at + ms(ABSOLUTE))
    }
}

/// Why a pairing or a device operation was refused.
#[derive(Debug)]
pub enum DeviceError {
    /// A bad device name (the message says what a good one is).
    Name(String),
    /// A device of that name is already paired.
    Taken(String),
    /// No live pairing has this code: unknown, already used, or expired.
    BadCode,
    NoSuchDevice(String),
    Store(StoreError),
}

impl fmt::Display for DeviceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceError::Name(m) => f.write_str(m),
            DeviceError::Taken(name) => write!(
                f,
                "a device named {name:?} is already paired — 'missionboard web revoke {name}' first, or pair with another --name"
            ),
            DeviceError::BadCode => f.write_str(
                "this pairing code is unknown, already used or expired — run 'missionboard web pair' for a new link",
            ),
            DeviceError::NoSuchDevice(name) => write!(
                f,
                "no paired device is named {name:?} — 'missionboard web devices' lists them"
            ),
            DeviceError::Store(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for DeviceError {}

impl From<StoreError> for DeviceError {
    fn from(e: StoreError) -> Self {
        DeviceError::Store(e)
    }
}

/// A freshly minted secret: 256 bits from the operating system, hex-encoded.
pub fn mint_secret() -> String {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the operating system's random source");
    hex(&bytes)
}

/// What the store keeps of a secret.
pub fn digest(secret: &str) -> String {
    hex(&Sha256::digest(secret.as_bytes()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn ms(d: Duration) -> i64 {
    d.as_millis() as i64
}

/// A device name: 1–40 letters, digits, `-`, `_` or `.`, so it reads the same in a
/// terminal, a page and a log, and needs no quoting on a command line.
pub fn check_name(name: &str) -> Result<String, DeviceError> {
    let name = name.trim();
    let fine = !name.is_empty()
        && name.len() <= 40
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if fine {
        Ok(name.to_string())
    } else {
        Err(DeviceError::Name(format!(
            "device name {name:?} is not usable: 1 to 40 letters, digits, '-', '_' or '.' (e.g. --name phone)"
        )))
    }
}

/// The device service.
#[derive(Clone)]
pub struct Devices {
    store: Store,
}

impl Devices {
    pub fn new(store: Store) -> Devices {
        Devices { store }
    }

    /// Mint a one-time pairing code for a device to be called `name`. Returns the
    /// code (shown once, never stored).
    pub fn start_pairing(&self, name: &str) -> Result<String, DeviceError> {
        let name = check_name(name)?;
        if self.get(&name)?.is_some() {
            return Err(DeviceError::Taken(name));
        }
        let code = mint_secret();
        let now = clock::now_ms();
        self.store.with(|c| {
            // Spent and expired codes are of no use to anyone: cleared as we go.
            c.execute(
                "DELETE FROM web_pairings WHERE used_at IS NOT NULL OR expires_at <= ?1",
                params![now],
            )?;
            c.execute(
                "INSERT INTO web_pairings (code_hash, device_name, created_at, expires_at)
                 VALUES (?1, ?2, ?3, ?4)",
                params![digest(&code), name, now, now + ms(PAIRING_TTL)],
            )
        })?;
        Ok(code)
    }

    /// Spend pairing `code` (once: the guarded write lands for exactly one caller)
    /// and pair its device. Returns the device's name and its credential (shown
    /// once, never stored).
    pub fn redeem(&self, code: &str) -> Result<(String, String), DeviceError> {
        let now = clock::now_ms();
        let credential = mint_secret();
        let paired = self.store.write(|tx| {
            let name: Option<String> = tx
                .query_row(
                    "UPDATE web_pairings SET used_at = ?2
                     WHERE code_hash = ?1 AND used_at IS NULL AND expires_at > ?2
                     RETURNING device_name",
                    params![digest(code.trim()), now],
                    |r| r.get(0),
                )
                .optional()?;
            let Some(name) = name else {
                return Ok(None);
            };
            // A device paired under the same name meanwhile keeps it: this code
            // then pairs nothing.
            let inserted = tx.execute(
                "INSERT INTO web_devices (name, token_hash, created_at, last_seen_at)
                 VALUES (?1, ?2, ?3, ?3) ON CONFLICT (name) DO NOTHING",
                params![name, digest(&credential), now],
            )?;
            Ok((inserted == 1).then_some(name))
        })?;
        match paired {
            Some(name) => Ok((name, credential)),
            None => Err(DeviceError::BadCode),
        }
    }

    /// The live device `credential` belongs to, its last-seen time slid forward
    /// (written at most once a minute). `None`: unknown, revoked or expired.
    pub fn authenticate(&self, credential: &str) -> Result<Option<Device>, DeviceError> {
        let now = clock::now_ms();
        let found: Option<(String, i64, i64)> = self.store.with(|c| {
            c.query_row(
                "SELECT name, created_at, last_seen_at FROM web_devices WHERE token_hash = ?1",
                params![digest(credential.trim())],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()
        })?;
        let Some((name, created_at, last_seen_at)) = found else {
            return Ok(None);
        };
        if Device::expiry(created_at, last_seen_at) <= now {
            return Ok(None);
        }
        let mut seen = last_seen_at;
        if now - last_seen_at >= SEEN_EVERY_MS {
            self.store.with(|c| {
                c.execute(
                    "UPDATE web_devices SET last_seen_at = ?2 WHERE name = ?1 AND last_seen_at < ?2",
                    params![name, now],
                )
            })?;
            seen = now;
        }
        Ok(Some(Device {
            expires_at: Device::expiry(created_at, seen),
            name,
            created_at,
            last_seen_at: seen,
        }))
    }

    pub fn get(&self, name: &str) -> Result<Option<Device>, DeviceError> {
        Ok(self.list()?.into_iter().find(|d| d.name == name))
    }

    /// Every paired device, the most recently seen first (expired ones included,
    /// until revoked: the list says when each stopped working).
    pub fn list(&self) -> Result<Vec<Device>, DeviceError> {
        Ok(self.store.with(|c| {
            let mut s = c.prepare_cached(
                "SELECT name, created_at, last_seen_at FROM web_devices
                 ORDER BY last_seen_at DESC, name LIMIT 1000",
            )?;
            s.query_map([], |r| {
                let (name, created_at, last_seen_at): (String, i64, i64) =
                    (r.get(0)?, r.get(1)?, r.get(2)?);
                Ok(Device {
                    expires_at: Device::expiry(created_at, last_seen_at),
                    name,
                    created_at,
                    last_seen_at,
                })
            })?
            .collect()
        })?)
    }

    /// End device `name` at once: its credential is forgotten, so its next request
    /// is refused.
    pub fn revoke(&self, name: &str) -> Result<(), DeviceError> {
        let gone = self.store.with(|c| {
            c.execute(
                "DELETE FROM web_devices WHERE name = ?1",
                params![name.trim()],
            )
        })?;
        if gone == 0 {
            return Err(DeviceError::NoSuchDevice(name.trim().to_string()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn devices() -> (tempfile::TempDir, Devices) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("board.db")).unwrap();
        (dir, Devices::new(store))
    }

    #[test]
    fn a_code_pairs_exactly_one_device_and_only_its_hash_is_stored() {
        let (_d, devices) = devices();
        let code = devices.start_pairing("phone").unwrap();
        assert_eq!(code.len(), 64);
        let (name, credential) = devices.redeem(&code).unwrap();
        assert_eq!(name, "phone");
        assert!(matches!(devices.redeem(&code), Err(DeviceError::BadCode)));
        let stored: Vec<String> = devices
            .store
            .with(|c| {
                let mut s = c.prepare("SELECT token_hash FROM web_devices")?;
                s.query_map([], |r| r.get(0))?.collect()
            })
            .unwrap();
        assert_eq!(stored, vec![digest(&credential)]);
        assert_eq!(
            devices.authenticate(&credential).unwrap().unwrap().name,
            "phone"
        );
        assert!(devices.authenticate(&code).unwrap().is_none());
    }

    #[test]
    fn a_revoked_device_is_refused_and_a_taken_name_cannot_pair_again() {
        let (_d, devices) = devices();
        let (_, credential) = devices
            .redeem(&devices.start_pairing("phone").unwrap())
            .unwrap();
        assert!(matches!(
            devices.start_pairing("phone"),
            Err(DeviceError::Taken(_))
        ));
        devices.revoke("phone").unwrap();
        assert!(devices.authenticate(&credential).unwrap().is_none());
        assert!(matches!(
            devices.revoke("phone"),
            Err(DeviceError::NoSuchDevice(_))
        ));
        assert!(devices.start_pairing("a phone").is_err());
    }

    #[test]
    fn an_expired_code_and_a_stale_credential_are_refused() {
        let (_d, devices) = devices();
        let code = devices.start_pairing("old").unwrap();
        devices
            .store
            .with(|c| c.execute("UPDATE web_pairings SET expires_at = 1", []))
            .unwrap();
        assert!(matches!(devices.redeem(&code), Err(DeviceError::BadCode)));
        let (_, credential) = devices
            .redeem(&devices.start_pairing("tablet").unwrap())
            .unwrap();
        let long_ago = clock::now_ms() - ms(SLIDING) - 1;
        devices
            .store
            .with(|c| {
                c.execute(
                    "UPDATE web_devices SET last_seen_at = ?1",
                    params![long_ago],
                )
            })
            .unwrap();
        assert!(devices.authenticate(&credential).unwrap().is_none());
    }
}
