//! The server's kill paths, counted apart (`sim/kill.rs`): each one on in
//! the scenario writes `<path>_kills` and `<path>_kill_requests` into
//! summary.json, and nothing when it is off (shipped outputs stay as they
//! were).

use serde::Serialize;
use serde::ser::SerializeMap;

/// A kill path that no policy decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KillPath {
    /// A request ran past `fleet.kill.request_timeout_s` (`timeout_kill` rows).
    RequestTimeout,
    /// gunicorn's heartbeat ended a drain (`drain_killed`, branch `heartbeat_kill`).
    Heartbeat,
    /// uWSGI's reload mercy ended a drain (`drain_killed`, branch `mercy_kill`).
    Mercy,
}

impl KillPath {
    pub const ALL: [KillPath; 3] = [
        KillPath::RequestTimeout,
        KillPath::Heartbeat,
        KillPath::Mercy,
    ];

    /// The summary.json prefix.
    pub fn label(self) -> &'static str {
        match self {
            KillPath::RequestTimeout => "timeout",
            KillPath::Heartbeat => "heartbeat",
            KillPath::Mercy => "mercy",
        }
    }

    /// The `branch` of its `events.csv` row.
    pub fn branch(self) -> &'static str {
        match self {
            KillPath::RequestTimeout => "request_timeout",
            KillPath::Heartbeat => "heartbeat_kill",
            KillPath::Mercy => "mercy_kill",
        }
    }
}

/// Workers one path killed, and the requests in flight it reset.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KillCounts {
    pub kills: u64,
    pub requests: u64,
}

/// The paths on in a run, in `KillPath::ALL` order, flattened into
/// summary.json.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KillPaths(pub Vec<(KillPath, KillCounts)>);

impl KillPaths {
    /// A path's counts, `None` when it was off.
    pub fn get(&self, p: KillPath) -> Option<KillCounts> {
        self.0.iter().find(|(q, _)| *q == p).map(|(_, c)| *c)
    }

    /// `(key, value)` pairs as summary.json writes them.
    pub fn entries(&self) -> impl Iterator<Item = (String, u64)> + '_ {
        self.0.iter().flat_map(|(p, c)| {
            [
                (format!("{}_kills", p.label()), c.kills),
                (format!("{}_kill_requests", p.label()), c.requests),
            ]
        })
    }
}

impl Serialize for KillPaths {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(2 * self.0.len()))?;
        for (k, v) in self.entries() {
            map.serialize_entry(&k, &v)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_branches_are_distinct() {
        for (i, a) in KillPath::ALL.iter().enumerate() {
            for b in &KillPath::ALL[i + 1..] {
                assert_ne!(a.label(), b.label());
                assert_ne!(a.branch(), b.branch());
            }
        }
    }
}
