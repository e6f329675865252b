//! IPC memory sharing: export keys for allocations, a PID whitelist, import by key, within a
//! process and between processes.
//!
//! acl-twin's device memory lies in the process's window of the twin's node space
//! ([`ascendc_twin::Space::open`]): a memory file at an address every process of this user
//! reserves for it. An export grants the allocation in the window's header (with its
//! whitelist, so the importer can check it); the key names the exporter's slot, process and
//! window file and the grant. An import from another process maps the exporter's window at
//! the same address as in the exporter ([`ascendc_twin::Space::attach`]; unless a process
//! loaded two copies of acl-twin, see [`ascendc_twin::Space::open`]), so the imported pointer
//! equals the exporter's (an NPU makes no such promise: a program must not rely on it), and
//! registers the range as device memory of this process.
//!
//! The documented rules are kept: only whole allocations are exported (an address inside
//! one, or a size past its end, is refused); unless the export disabled PID validation, the
//! importing process must be on the key's whitelist (`aclrtIpcMemSetImportPid`, with the PID
//! `aclrtDeviceGetBareTgid` reports), which only the exporter sets; a closed key, or one whose
//! allocation was freed, can no longer be imported. `aclrtIpcMemClose` closes an import in the
//! importing process (the memory stays the exporter's) and the key in the exporting one (later
//! imports fail; existing ones stay mapped). In one process importer and exporter cannot be
//! told apart: the import returns the exporter's own pointer, and the first close of the key
//! closes it for both. An imported pointer is released with `aclrtIpcMemClose`, not
//! `aclrtFree`.
//!
//! Limits of acl-twin (not of ACL): [`ascendc_twin::GRANTS`] live exports per process,
//! [`ascendc_twin::GRANT_PIDS`] whitelisted processes per key, and a window once mapped is
//! kept: importing from a process that took the slot of one this process imported from
//! before (which has ended) is refused.

use std::collections::HashMap;
use std::sync::Arc;

use ascendc_sys::*;
use ascendc_twin::Space;

use crate::fail::{fail, R};

/// What an export key names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Key {
    slot: u32,
    pid: u32,
    fd: i32,
    grant: u32,
    nonce: u64,
}

impl Key {
    fn text(&self) -> String {
        format!(
            "acl-twin:{}:{}:{}:{}:{:016x}",
            self.slot, self.pid, self.fd, self.grant, self.nonce
        )
    }

    fn parse(key: &str) -> R<Key> {
        let bad = || {
            fail(
                ACL_ERROR_INVALID_PARAM,
                format!("`{key}` is not an IPC key of acl-twin"),
            )
        };
        let mut f = key.split(':');
        if f.next() != Some("acl-twin") {
            return bad();
        }
        let mut next = || f.next().ok_or(());
        let parsed = (|| -> Result<Key, ()> {
            let k = Key {
                slot: next()?.parse().map_err(drop)?,
                pid: next()?.parse().map_err(drop)?,
                fd: next()?.parse().map_err(drop)?,
                grant: next()?.parse().map_err(drop)?,
                nonce: u64::from_str_radix(next()?, 16).map_err(drop)?,
            };
            Ok(k)
        })();
        match parsed {
            Ok(k) if f.next().is_none() => Ok(k),
            _ => bad(),
        }
    }
}

/// The imports of this process from other processes: key -> imported address.
#[derive(Default)]
pub(crate) struct Ipc {
    imports: HashMap<String, usize>,
}

impl Ipc {
    /// A key for `size` bytes at `addr` (the start of an allocation of this process).
    pub fn export(
        &mut self,
        space: &Arc<Space>,
        addr: usize,
        size: usize,
        flags: u64,
    ) -> R<String> {
        if flags & !ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION != 0 {
            return fail(
                ACL_ERROR_INVALID_PARAM,
                format!("unknown export flags {flags:#x}"),
            );
        }
        let any = flags & ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION != 0;
        let Some((grant, nonce)) = space.grant(addr, size, any) else {
            return fail(
                ACL_ERROR_RT_MEMORY_ALLOCATION,
                format!(
                    "acl-twin holds at most {} live IPC exports per process",
                    ascendc_twin::GRANTS
                ),
            );
        };
        Ok(Key {
            slot: space.rank(),
            pid: std::process::id(),
            fd: space.file_descriptor(),
            grant,
            nonce,
        }
        .text())
    }

    /// Whitelists `pids` for `key` (a key this process exported).
    pub fn set_pids(&mut self, space: &Space, key: &str, pids: &[i32]) -> R<()> {
        let k = Key::parse(key)?;
        if k.pid != std::process::id() {
            return fail(
                ACL_ERROR_INVALID_PARAM,
                format!("IPC key `{key}` was exported by process {}: only the exporter sets its whitelist", k.pid),
            );
        }
        if let Some(p) = pids.iter().find(|&&p| p <= 0) {
            return fail(ACL_ERROR_INVALID_PARAM, format!("pid {p}"));
        }
        let pids: Vec<u32> = pids.iter().map(|&p| p as u32).collect();
        space
            .grant_pids(k.grant, k.nonce, &pids)
            .or_else(|e| fail(ACL_ERROR_INVALID_PARAM, format!("IPC key `{key}`: {e}")))
    }

    /// The memory `key` names, for the calling process: `(address, bytes, whether it is
    /// another process's and new here)`. Another process's window is mapped on the way.
    pub fn import(&mut self, space: &Space, key: &str, flags: u64) -> R<(usize, usize, bool)> {
        if flags & !ACL_RT_IPC_MEM_IMPORT_FLAG_ENABLE_PEER_ACCESS != 0 {
            return fail(
                ACL_ERROR_INVALID_PARAM,
                format!("unknown import flags {flags:#x}"),
            );
        }
        let k = Key::parse(key)?;
        let me = std::process::id();
        let foreign = k.pid != me;
        if foreign {
            if let Some(&a) = self.imports.get(key) {
                if space.read_grant(k.slot, k.grant, k.nonce).is_some() {
                    return Ok((a, 0, false));
                }
            }
            if let Err(e) = space.attach(k.slot, k.pid, k.fd) {
                return fail(ACL_ERROR_INVALID_PARAM, format!("IPC key `{key}`: {e}"));
            }
        }
        let Some(g) = space.read_grant(k.slot, k.grant, k.nonce) else {
            return fail(
                ACL_ERROR_INVALID_PARAM,
                format!("unknown or closed IPC key `{key}` (or its memory was freed)"),
            );
        };
        if !g.any_pid && !g.pids.contains(&me) {
            return fail(
                ACL_ERROR_RT_PARAM_INVALID,
                format!("process {me} is not on the whitelist of IPC key `{key}` (aclrtIpcMemSetImportPid)"),
            );
        }
        if foreign {
            self.imports.insert(key.to_string(), g.addr);
        }
        Ok((g.addr, g.len, foreign))
    }

    /// Closes `key`: this process's import of it, or, if this process exported it, the key.
    /// Returns the address of an import to drop.
    pub fn close(&mut self, space: &Space, key: &str) -> R<Option<usize>> {
        let k = Key::parse(key)?;
        if k.pid != std::process::id() {
            return match self.imports.remove(key) {
                Some(a) => Ok(Some(a)),
                None => fail(
                    ACL_ERROR_INVALID_PARAM,
                    format!("IPC key `{key}` is not imported by this process"),
                ),
            };
        }
        if space.revoke(k.grant, k.nonce) {
            Ok(None)
        } else {
            fail(
                ACL_ERROR_INVALID_PARAM,
                format!("unknown or closed IPC key `{key}`"),
            )
        }
    }

    /// Whether `addr` is an import of this process.
    pub fn is_import(&self, addr: usize) -> bool {
        self.imports.values().any(|&a| a == addr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_read_back_and_anything_else_is_refused() {
        let k = Key {
            slot: 63,
            pid: 4_194_304,
            fd: 1023,
            grant: 255,
            nonce: u64::MAX,
        };
        assert!(k.text().len() < ACL_IPC_KEY_LEN);
        assert_eq!(Key::parse(&k.text()).unwrap(), k);
        for bad in [
            "",
            "acl-twin",
            "acl-twin:1:2:3:4",
            "acl-twin:1:2:3:4:5:6",
            "x:1:2:3:4:5",
            "acl-twin:a:2:3:4:5",
        ] {
            assert!(Key::parse(bad).is_err(), "{bad}");
        }
    }
}
