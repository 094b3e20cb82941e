//! Secrets: which files hold credentials (withheld from every tool unless
//! the user's own rules name them), and the known secret values replaced
//! wherever they would reach the model or the disk.
//!
//! Imports nothing of carapace's: a leaf every folder above may use.

mod files;
mod redact;

pub use files::{
    CredentialFiles, HOME_CREDENTIALS, WithheldFile, Withholding, file_holds_private_key,
    holds_private_key, key_file, name_holds,
};
pub use redact::{Redactor, marker, own_credentials, remember};
