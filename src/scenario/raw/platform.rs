//! `[fleet.cow]` (copy-on-write after a preload fork, `fleet::cow`) and
//! `[platform]` (what the container platform does to an instance: a
//! whole-container OOM kill, reload waves), raw.

use serde::{Deserialize, Serialize};

/// `[fleet.cow]`: the pages a worker inherits from a preloaded master and
/// how they unshare (`fleet::cow`). Every rate 0 (the default): the
/// `fleet.shared_mb` pages stay shared for the worker's whole life.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RawCow {
    /// The master loads the app and forks the workers from it (gunicorn
    /// `--preload`, puma `preload_app!`, uWSGI without `lazy-apps`), so
    /// they share `fleet.shared_mb`. `false`: each worker loads its own
    /// copy (all private) and the master holds `master_rss_mb` only.
    pub preload: bool,
    /// The master's RSS without the app; required with `preload = false`.
    pub master_rss_mb: f64,
    /// Fraction of the shared pages that requests' refcount writes ever
    /// reach (Instagram 2017: 250 -> 225 MB shared with the GC off).
    pub refcount_fraction: f64,
    /// Requests after which half of that reach is unshared.
    pub refcount_half_life_requests: f64,
    /// Fraction holding the headers of GC-tracked objects, unshared at once
    /// by the first full collection (Instagram 2017: 225 -> 140 MB).
    pub gc_fraction: f64,
    /// Requests a worker serves before its first full collection.
    pub gc_full_after_requests: u64,
    /// `gc.freeze()` before fork: collections never visit the inherited
    /// objects, so `gc_fraction` never unshares.
    pub gc_freeze: bool,
}

impl Default for RawCow {
    fn default() -> Self {
        RawCow {
            preload: true,
            master_rss_mb: 0.0,
            refcount_fraction: 0.0,
            refcount_half_life_requests: 50.0,
            gc_fraction: 0.0,
            gc_full_after_requests: 2000,
            gc_freeze: false,
        }
    }
}

/// `[platform]`: what the container platform does to whole instances.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RawPlatform {
    /// cgroup v2 `memory.oom.group = 1` (Kubernetes >= 1.28): one OOM
    /// kills every process of the container, master included; the
    /// kubelet restarts it after `restart_delay_s` and its master forks
    /// every worker again. `false`: the kernel kills the largest worker.
    pub oom_group: bool,
    /// From a whole-container OOM kill to the master forking its workers
    /// (the kubelet's restart back-off, 10 s at first, plus the master's boot).
    pub restart_delay_s: f64,
    /// Reload waves (`kill -HUP` of the master, a deploy): every serving
    /// worker of the instance, or of the fleet, replaced at once.
    pub reload: Vec<RawReload>,
}

impl Default for RawPlatform {
    fn default() -> Self {
        RawPlatform {
            oom_group: false,
            restart_delay_s: 10.0,
            reload: Vec::new(),
        }
    }
}

/// One `[[platform.reload]]` wave.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RawReload {
    /// When, from the window's start.
    pub at_s: f64,
    /// `"fleet"` (every instance at `at_s`) or `"instance"` (`instance` only).
    pub scope: ReloadScope,
    pub instance: u32,
}

impl Default for RawReload {
    fn default() -> Self {
        RawReload {
            at_s: 0.0,
            scope: ReloadScope::Fleet,
            instance: 0,
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ReloadScope {
    Fleet,
    Instance,
}
