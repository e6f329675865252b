//! IPC memory sharing: export keys for allocations, a PID whitelist, import by key.
//!
//! All devices of acl-twin live in one process and one address space, so an import returns
//! the exporter's own address. The documented rules are kept: only whole allocations are
//! exported (an address inside one, or a size past its end, is refused); unless the export
//! disabled PID validation, the importing process must be on the key's whitelist
//! (`aclrtIpcMemSetImportPid`, with the PID `aclrtDeviceGetBareTgid` reports); a closed key,
//! or one whose allocation was freed, can no longer be imported. In one process importer and
//! exporter cannot be told apart: the first `aclrtIpcMemClose` of a key closes it for both.

use std::collections::HashMap;

use ascendc_sys::*;

use crate::fail::{fail, R};

/// One exported allocation.
struct Export {
    addr: usize,
    validate_pid: bool,
    pids: Vec<i32>,
}

/// The runtime's export keys.
#[derive(Default)]
pub(crate) struct Ipc {
    keys: HashMap<String, Export>,
    next: u64,
}

impl Ipc {
    /// A key for the allocation at `addr` (which must be its start).
    pub fn export(&mut self, addr: usize, flags: u64) -> R<String> {
        if flags & !ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION != 0 {
            return fail(
                ACL_ERROR_INVALID_PARAM,
                format!("unknown export flags {flags:#x}"),
            );
        }
        self.next += 1;
        let key = format!("acl-twin-{}-{}", std::process::id(), self.next);
        self.keys.insert(
            key.clone(),
            Export {
                addr,
                validate_pid: flags & ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION == 0,
                pids: Vec::new(),
            },
        );
        Ok(key)
    }

    /// Whitelists `pids` for `key`.
    pub fn set_pids(&mut self, key: &str, pids: &[i32]) -> R<()> {
        match self.keys.get_mut(key) {
            Some(e) => {
                e.pids.extend_from_slice(pids);
                Ok(())
            }
            None => fail(ACL_ERROR_INVALID_PARAM, format!("unknown IPC key `{key}`")),
        }
    }

    /// The address `key` names, for the calling process.
    pub fn import(&self, key: &str, flags: u64) -> R<usize> {
        if flags & !ACL_RT_IPC_MEM_IMPORT_FLAG_ENABLE_PEER_ACCESS != 0 {
            return fail(
                ACL_ERROR_INVALID_PARAM,
                format!("unknown import flags {flags:#x}"),
            );
        }
        let Some(e) = self.keys.get(key) else {
            return fail(
                ACL_ERROR_INVALID_PARAM,
                format!("unknown or closed IPC key `{key}`"),
            );
        };
        let me = std::process::id() as i32;
        if e.validate_pid && !e.pids.contains(&me) {
            return fail(
                ACL_ERROR_RT_PARAM_INVALID,
                format!("process {me} is not on the whitelist of IPC key `{key}` (aclrtIpcMemSetImportPid)"),
            );
        }
        Ok(e.addr)
    }

    /// Drops the keys of the allocation at `addr` (it was freed: an import would reach freed
    /// memory).
    pub fn forget(&mut self, addr: usize) {
        self.keys.retain(|_, e| e.addr != addr);
    }

    /// Closes `key`.
    pub fn close(&mut self, key: &str) -> R<()> {
        match self.keys.remove(key) {
            Some(_) => Ok(()),
            None => fail(
                ACL_ERROR_INVALID_PARAM,
                format!("unknown or closed IPC key `{key}`"),
            ),
        }
    }
}
