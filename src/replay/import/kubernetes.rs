//! Kubernetes OOM kills, in the forms users have at hand:
//!
//! - `kubectl get pod NAME -o json` / `kubectl get pods -o json` (a `Pod`,
//!   or a `List` of them): every container status whose `state.terminated`
//!   or `lastState.terminated` has `reason: "OOMKilled"` is an OOM kill of
//!   the pod (the instance) at `finishedAt`. Kubernetes keeps only the last
//!   termination per container: export the pods after each kill, or use
//!   events, to see more than one.
//! - `kubectl get events -o json` (an `EventList` or `List` of `Event`s):
//!   an event whose `reason` is `OOMKilled`, `OOMKilling` (node-problem-
//!   detector) or `SystemOOM` (the kubelet's `System OOM encountered,
//!   victim process: NAME, pid: N`) is an OOM kill at `lastTimestamp`
//!   (else `eventTime`, else `firstTimestamp`); its instance is the
//!   involved object's name when that is a Pod, and the worker the message's
//!   `pid: N`. A repeated event (`count` > 1) is one kill at its last time.
//! - `kubectl describe pod` text: a container's `State:` or `Last State:
//!   Terminated` block with `Reason: OOMKilled` is an OOM kill of the pod
//!   named by the preceding `Name:` line, at its `Finished:` time
//!   (`Tue, 01 Dec 2026 13:25:41 +0000`).
//!
//! The instance is the pod's name: give the other files the same names
//! (`--instance`) for their kills to join.

use super::ImportError;
use super::prefix::{number_after, rfc1123};
use crate::metrics::EventKind;
use crate::replay::recording::{Event, Format, Kind, Origin, Part, Source};
use crate::replay::time::TsReader;
use serde_json::Value;

/// Whether the text is a `kubectl ... -o json` document.
pub fn looks_like_json(text: &str) -> bool {
    let head: String = text.chars().take(4096).collect();
    head.trim_start().starts_with('{')
        && head.contains("\"apiVersion\"")
        && head.contains("\"kind\"")
}

/// Whether the text is `kubectl describe pod` output.
pub fn looks_like_describe(text: &str) -> bool {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty()).take(200);
    lines.next().is_some_and(|l| l.starts_with("Name:"))
        && lines.any(|l| l.starts_with("Containers:"))
}

pub fn parse_json(name: &str, text: &str) -> Result<Part, ImportError> {
    let doc: Value = serde_json::from_str(text)
        .map_err(|e| ImportError::row(name, e.line(), format!("not a JSON document: {e}")))?;
    let mut source = Source::new(name, Format::Kubernetes);
    let mut ts = TsReader::default();
    let mut events = Vec::new();
    let items: Vec<&Value> = match doc.get("items").and_then(Value::as_array) {
        Some(items) => items.iter().collect(),
        None => vec![&doc],
    };
    for (n, item) in items.iter().enumerate() {
        let kind = item.get("kind").and_then(Value::as_str).unwrap_or("");
        let found = match kind {
            "Pod" => pod_kills(item),
            "Event" => event_kill(item).into_iter().collect(),
            _ => {
                source.fired(&format!("kubernetes: {kind} (not read)"));
                continue;
            }
        };
        for (instance, worker, at) in found {
            let t = ts
                .read(&at)
                .map_err(|e| ImportError::row(name, 1, format!("item {n}: {e}")))?;
            let origin = Origin {
                source: 0,
                line: n + 1,
            };
            let mut e = Event::new(t, Kind::Known(EventKind::OomKill), origin);
            e.instance = instance;
            e.worker = worker;
            events.push(e);
            source.fired(&format!("kubernetes: {kind} OOMKilled"));
        }
    }
    source.time_base = ts.base();
    source.events = events.len();
    Ok(Part::new(source, events))
}

type Kill = (Option<String>, Option<String>, String);

fn text(v: &Value, path: &[&str]) -> Option<String> {
    let mut v = v;
    for p in path {
        v = v.get(p)?;
    }
    v.as_str().map(str::to_string)
}

fn pod_kills(pod: &Value) -> Vec<Kill> {
    let name = text(pod, &["metadata", "name"]);
    let statuses = pod
        .get("status")
        .and_then(|s| s.get("containerStatuses"))
        .and_then(Value::as_array);
    let mut out = Vec::new();
    for c in statuses.into_iter().flatten() {
        for state in ["state", "lastState"] {
            let Some(term) = c.get(state).and_then(|s| s.get("terminated")) else {
                continue;
            };
            if text(term, &["reason"]).as_deref() == Some("OOMKilled") {
                // A kill without its time as text is a misread file, not
                // no kill: its `finishedAt` (any JSON) goes to the clock
                // reader, which names what it got.
                let at = match term.get("finishedAt") {
                    Some(Value::String(s)) => s.clone(),
                    Some(other) => format!("finishedAt {other}"),
                    None => "no finishedAt".to_string(),
                };
                out.push((name.clone(), None, at));
            }
        }
    }
    out
}

fn event_kill(ev: &Value) -> Option<Kill> {
    let reason = text(ev, &["reason"])?;
    if !["OOMKilled", "OOMKilling", "SystemOOM"].contains(&reason.as_str()) {
        return None;
    }
    let at = text(ev, &["lastTimestamp"])
        .or_else(|| text(ev, &["eventTime"]))
        .or_else(|| text(ev, &["firstTimestamp"]))?;
    let pod = text(ev, &["involvedObject", "kind"]).as_deref() == Some("Pod");
    let instance = pod.then(|| text(ev, &["involvedObject", "name"])).flatten();
    let message = text(ev, &["message"]).unwrap_or_default();
    let worker = number_after(&message, "pid: ")
        .or_else(|| number_after(&message, "Killed process "))
        .map(|p| p.to_string());
    Some((instance, worker, at))
}

/// `kubectl describe pod` output.
pub fn parse_describe(name: &str, text: &str) -> Part {
    let mut source = Source::new(name, Format::Kubernetes);
    let mut ts = TsReader::default();
    let mut events = Vec::new();
    let mut pod: Option<String> = None;
    let mut oom_at: Option<usize> = None;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        let value = |key: &str| trimmed.strip_prefix(key).map(str::trim);
        if let Some(v) = line.strip_prefix("Name:") {
            pod = Some(v.trim().to_string());
            oom_at = None;
        } else if value("State:").is_some() || value("Last State:").is_some() {
            oom_at = None;
        } else if value("Reason:") == Some("OOMKilled") {
            oom_at = Some(i + 1);
        } else if let (Some(v), Some(_)) = (value("Finished:"), oom_at) {
            let t = rfc1123(v).ok_or_else(|| format!("`{v}` is not a kubectl time"));
            match t.and_then(|s| ts.read(&s)) {
                Ok(t) => {
                    let mut e = Event::new(
                        t,
                        Kind::Known(EventKind::OomKill),
                        Origin {
                            source: 0,
                            line: i + 1,
                        },
                    );
                    e.instance.clone_from(&pod);
                    events.push(e);
                    source.fired("kubernetes: describe OOMKilled");
                }
                Err(e) => source.unparsed(i + 1, line, e),
            }
            oom_at = None;
        }
    }
    if let Some(line) = oom_at {
        source.unparsed(
            line,
            "Reason: OOMKilled",
            "no Finished: time after it".into(),
        );
    }
    source.time_base = ts.base();
    source.events = events.len();
    Part::new(source, events)
}

#[cfg(test)]
mod tests {
    use super::*;

    // The shapes of `kubectl get pod -o json` (core/v1 Pod,
    // ContainerStateTerminated) and `kubectl get events -o json`.
    const POD: &str = r#"{
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web-7d9c-abcde", "namespace": "default"},
    "status": {"containerStatuses": [{
        "name": "web",
        "restartCount": 1,
        "state": {"running": {"startedAt": "2026-12-01T13:25:42Z"}},
        "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled",
            "startedAt": "2026-12-01T13:00:00Z", "finishedAt": "2026-12-01T13:25:41Z"}}
    }]}
}"#;

    #[test]
    fn pods_and_events_as_kubectl_prints_them() {
        assert!(looks_like_json(POD));
        let p = parse_json("pod.json", POD).unwrap();
        assert_eq!(p.events.len(), 1);
        assert_eq!(p.events[0].instance.as_deref(), Some("web-7d9c-abcde"));
        assert!(p.events[0].is(EventKind::OomKill));
        let events = r#"{"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "Event", "reason": "SystemOOM",
             "message": "System OOM encountered, victim process: gunicorn, pid: 4242",
             "involvedObject": {"kind": "Node", "name": "node-1"},
             "lastTimestamp": "2026-12-01T13:25:41Z", "count": 1},
            {"apiVersion": "v1", "kind": "Event", "reason": "Pulled",
             "involvedObject": {"kind": "Pod", "name": "web"}, "lastTimestamp": "2026-12-01T13:00:00Z"}
        ]}"#;
        let p = parse_json("events.json", events).unwrap();
        assert_eq!(p.events.len(), 1);
        assert_eq!(p.events[0].worker.as_deref(), Some("4242"));
        let e = parse_json("bad.json", "{\"apiVersion\": \"v1\",\n \"kind\": ").unwrap_err();
        assert!(
            e.to_string().starts_with("bad.json:2: not a JSON document"),
            "{e}"
        );
    }

    #[test]
    fn describe_pod_text() {
        let text = "Name:             web-7d9c-abcde\n\
                    Namespace:        default\n\
                    Containers:\n\
                    \x20 web:\n\
                    \x20   State:          Running\n\
                    \x20     Started:      Tue, 01 Dec 2026 13:25:42 +0000\n\
                    \x20   Last State:     Terminated\n\
                    \x20     Reason:       OOMKilled\n\
                    \x20     Exit Code:    137\n\
                    \x20     Started:      Tue, 01 Dec 2026 13:00:00 +0000\n\
                    \x20     Finished:     Tue, 01 Dec 2026 13:25:41 +0000\n\
                    \x20   Restart Count:  1\n";
        assert!(looks_like_describe(text));
        let p = parse_describe("d.txt", text);
        assert_eq!(p.events.len(), 1);
        assert_eq!(p.events[0].instance.as_deref(), Some("web-7d9c-abcde"));
        assert_eq!(
            p.events[0].t_s,
            crate::replay::time::parse_rfc3339("2026-12-01T13:25:41Z").unwrap()
        );
    }
}
