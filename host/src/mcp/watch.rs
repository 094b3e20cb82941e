//! The resources carapace follows on one server: those the model read from
//! a server that offers subscriptions. A change the server reports (or, over
//! HTTP, a read that differs from the last) is kept until the loop takes it
//! and tells the model.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;

/// Resources followed per server at most: each one is read again between
/// turns over HTTP, and each is one subscription the server keeps.
pub const MAX_WATCHED: usize = 32;

/// What is followed and what changed.
#[derive(Debug, Default)]
pub struct ResourceWatch {
    /// Each followed URI, with a digest of what was last read.
    watched: Mutex<HashMap<String, u64>>,
    /// Changed since the loop last took them, in the order heard.
    updated: Mutex<Vec<String>>,
}

/// Whether a read is the first of its URI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Followed {
    /// Now followed (a subscription is due).
    New,
    /// Already followed: its digest is what was just read.
    Already,
    /// Not followed: the limit is reached.
    Full,
}

fn digest(contents: &str) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    contents.hash(&mut hasher);
    hasher.finish()
}

impl ResourceWatch {
    /// The model read `uri` (as `contents`).
    pub fn read(&self, uri: &str, contents: &str) -> Followed {
        let Ok(mut watched) = self.watched.lock() else {
            return Followed::Full;
        };
        if let Some(known) = watched.get_mut(uri) {
            *known = digest(contents);
            return Followed::Already;
        }
        if watched.len() >= MAX_WATCHED {
            return Followed::Full;
        }
        watched.insert(uri.to_string(), digest(contents));
        Followed::New
    }

    /// A subscription that could not be made: not followed after all.
    pub fn forget(&self, uri: &str) {
        if let Ok(mut watched) = self.watched.lock() {
            watched.remove(uri);
        }
    }

    /// The URIs followed.
    pub fn followed(&self) -> Vec<String> {
        let watched = self.watched.lock();
        watched
            .map(|w| w.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// A fresh read of `uri` (a server followed by reading again): noted
    /// as a change when it differs from the last.
    pub fn reread(&self, uri: &str, contents: &str) {
        let changed = match self.watched.lock() {
            Ok(mut watched) => match watched.get_mut(uri) {
                Some(known) if *known != digest(contents) => {
                    *known = digest(contents);
                    true
                }
                _ => false,
            },
            Err(_) => false,
        };
        if changed {
            self.updated_uri(uri);
        }
    }

    /// The server said `uri` changed; kept when it is followed (a server
    /// may not speak of what carapace did not ask about).
    pub fn updated_uri(&self, uri: &str) {
        let followed = self.watched.lock().is_ok_and(|w| w.contains_key(uri));
        if let (true, Ok(mut updated)) = (followed, self.updated.lock())
            && !updated.iter().any(|u| u == uri)
        {
            updated.push(uri.to_string());
        }
    }

    /// What changed since the last time, each once.
    pub fn take_updated(&self) -> Vec<String> {
        self.updated
            .lock()
            .map(|mut u| std::mem::take(&mut *u))
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_is_kept_only_for_what_is_followed_and_taken_once() {
        let watch = ResourceWatch::default();
        assert_eq!(watch.read("ledger://a", "1"), Followed::New);
        assert_eq!(watch.read("ledger://a", "1"), Followed::Already);
        watch.updated_uri("ledger://b"); // never read: not kept
        watch.updated_uri("ledger://a");
        watch.updated_uri("ledger://a");
        assert_eq!(watch.take_updated(), vec!["ledger://a".to_string()]);
        assert!(watch.take_updated().is_empty());
    }

    #[test]
    fn a_reread_counts_as_a_change_only_when_it_differs() {
        let watch = ResourceWatch::default();
        watch.read("ledger://a", "1");
        watch.reread("ledger://a", "1");
        assert!(watch.take_updated().is_empty());
        watch.reread("ledger://a", "2");
        assert_eq!(watch.take_updated(), vec!["ledger://a".to_string()]);
        watch.reread("ledger://a", "2");
        assert!(watch.take_updated().is_empty());
    }

    #[test]
    fn no_more_than_the_limit_is_followed() {
        let watch = ResourceWatch::default();
        for i in 0..MAX_WATCHED {
            assert_eq!(watch.read(&format!("r://{i}"), ""), Followed::New);
        }
        assert_eq!(watch.read("r://over", ""), Followed::Full);
        watch.forget("r://0");
        assert_eq!(watch.read("r://over", ""), Followed::New);
    }
}
