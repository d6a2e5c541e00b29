//! Devices: pairing a phone (or any browser) with the web surface, and ending a
//! pairing. `web pair` mints the one-time code, the web page redeems it for a device
//! credential, `web revoke` (or, later, the board) ends a device at once. Every
//! surface pairs and revokes through here.

use crate::devices::{Device, DeviceError, Devices};
use crate::ops::host::Host;

/// A pairing waiting to be redeemed: the device's name and the one-time code.
pub struct Pairing {
    pub name: String,
    pub code: String,
}

/// Mint a pairing for a device called `name` (none: a fresh `device-xxxx`).
pub fn pair(host: &Host, name: Option<&str>) -> Result<Pairing, DeviceError> {
    let name = match name {
        Some(n) => crate::devices::check_name(n)?,
        None => format!("device-{}", &crate::devices::mint_secret()[..6]),
    };
    let code = Devices::new(host.store().clone()).start_pairing(&name)?;
    Ok(Pairing { name, code })
}

/// Redeem pairing `code`: the paired device's name and its credential.
pub fn redeem(host: &Host, code: &str) -> Result<(String, String), DeviceError> {
    Devices::new(host.store().clone()).redeem(code)
}

/// End device `name`: its next request is refused.
pub fn revoke(host: &Host, name: &str) -> Result<(), DeviceError> {
    Devices::new(host.store().clone()).revoke(name)
}

/// The live device a credential belongs to (its last-seen time slid forward).
pub fn authenticate(host: &Host, credential: &str) -> Result<Option<Device>, DeviceError> {
    Devices::new(host.store().clone()).authenticate(credential)
}
