//! What a decided need grants: a file bound to what was there when it
//! was decided, a tree, a host (an internal one only when the user's
//! settings name it), a variable's value, a command line.

use super::decision::Policy;
use super::needs::Resolved;
use crate::sandbox::{FileAccess, Grant};

impl Policy {
    pub(super) fn grant(&self, grant: Grant, need: &Resolved) -> Result<Grant, String> {
        match need {
            Resolved::File {
                requested,
                resolved,
                write: false,
                file,
                ..
            } => grant
                .read_file_as(requested, resolved, file.map(|f| f.id))
                .map_err(|e| e.to_string()),
            Resolved::File {
                requested,
                resolved,
                write: true,
                file,
                ..
            } => grant
                .write_file_as(requested, resolved, file.map(|f| f.id))
                .map_err(|e| e.to_string()),
            // A tree's search skips the credential files inside it.
            Resolved::Tree {
                dir, write: false, ..
            } => grant
                .withholding(self.withheld.clone())
                .tree(dir, FileAccess::Read)
                .map_err(|e| e.to_string()),
            Resolved::Tree { dir, write, .. } => grant
                .tree(
                    dir,
                    if *write {
                        FileAccess::Write
                    } else {
                        FileAccess::Read
                    },
                )
                .map_err(|e| e.to_string()),
            // Reaching an internal address is for what the user's own
            // settings name, never for whatever a model or plugin asks.
            Resolved::Host(host) if self.internal_hosts.iter().any(|i| i.covers(host)) => {
                Ok(grant.http_internal(host.clone()))
            }
            Resolved::Host(host) => Ok(grant.http_host(host.clone())),
            Resolved::Env(name) => Ok(match std::env::var(name) {
                Ok(value) => grant.env_var(name, value),
                Err(_) => grant,
            }),
            Resolved::Command(command) => Ok(grant.command(command.clone())),
        }
    }
}
