//! `fleetsim replay` reads what real servers write: gunicorn's error log
//! (gunicorn 23.0.0's format and messages, `gunicorn/glogging.py`,
//! `gunicorn/arbiter.py`, `gunicorn/workers/sync.py`), the recycler's
//! telemetry, the client's canary and a per-worker RSS series, all at once,
//! each recycle counted once; and hostile versions of them fail cleanly.

mod common;

use common::TempDir;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

struct Outcome {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn fleetsim(dir: &Path, args: &[&str]) -> Outcome {
    let o = Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run fleetsim");
    Outcome {
        code: o.status.code(),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

fn write(dir: &Path, name: &str, text: impl AsRef<[u8]>) {
    std::fs::write(dir.join(name), text).expect("write a fixture");
}

/// `fleetsim replay FILES... --out out` and its analysis.json.
fn replay(dir: &Path, args: &[&str]) -> (Outcome, Value) {
    let mut all = vec!["replay"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--out", "out"]);
    let o = fleetsim(dir, &all);
    assert_eq!(o.code, Some(0), "{}{}", o.stdout, o.stderr);
    let text = std::fs::read_to_string(dir.join("out/analysis.json")).expect("analysis.json");
    (
        o,
        serde_json::from_str(&text).expect("analysis.json parses"),
    )
}

/// One max-requests recycle of worker `pid` at `hh:mm`, with its respawn,
/// as a sync worker and the arbiter log it.
fn max_requests(hm: &str, pid: u32, next: u32) -> String {
    format!(
        "[2026-12-01 {hm}:00 +0000] [{pid}] [INFO] Autorestarting worker after current request.\n\
         [2026-12-01 {hm}:00 +0000] [{pid}] [INFO] Worker exiting (pid: {pid})\n\
         [2026-12-01 {hm}:01 +0000] [{next}] [INFO] Booting worker with pid: {next}\n"
    )
}

fn gunicorn_log() -> String {
    let mut log = String::from(
        "[2026-12-01 13:00:00 +0000] [100] [INFO] Starting gunicorn 23.0.0\n\
         [2026-12-01 13:00:00 +0000] [100] [INFO] Listening at: http://127.0.0.1:8000 (100)\n\
         [2026-12-01 13:00:00 +0000] [100] [INFO] Using worker: sync\n\
         [2026-12-01 13:00:00 +0000] [101] [INFO] Booting worker with pid: 101\n\
         [2026-12-01 13:00:00 +0000] [102] [INFO] Booting worker with pid: 102\n",
    );
    log += &max_requests("13:10", 101, 103);
    log += "[2026-12-01 13:20:00 +0000] [100] [ERROR] Worker (pid:102) was sent SIGKILL! Perhaps out of memory?\n\
            [2026-12-01 13:20:00 +0000] [104] [INFO] Booting worker with pid: 104\n";
    log += &max_requests("13:30", 103, 105);
    log += &max_requests("13:50", 104, 106);
    log += "[2026-12-01 14:00:00 +0000] [100] [INFO] Handling signal: term\n\
            [2026-12-01 14:00:00 +0000] [105] [INFO] Worker exiting (pid: 105)\n\
            [2026-12-01 14:00:00 +0000] [106] [INFO] Worker exiting (pid: 106)\n\
            [2026-12-01 14:00:01 +0000] [100] [INFO] Shutting down: Master\n";
    log
}

#[test]
fn a_gunicorn_log_counts_max_requests_recycles_and_an_oom_kill_apart() {
    let dir = TempDir::new("servers-gunicorn");
    write(dir.path(), "gunicorn-inst-A.log", gunicorn_log());
    let (o, a) = replay(dir.path(), &["gunicorn-inst-A.log"]);
    let t = &a["totals"];
    assert_eq!(t["recycles"], 3, "{t}");
    assert_eq!(t["oom_kills"], 1, "{t}");
    assert_eq!(t["recycles_by_trigger"][0]["label"], "max_requests");
    assert_eq!(t["recycles_by_trigger"][0]["count"], 3);
    let s = &a["sources"][0];
    assert_eq!(s["format"], "gunicorn");
    assert_eq!(
        s["unparsed_count"], 0,
        "master lines are known, not unparsed"
    );
    assert_eq!(s["instance"], "inst-A");
    assert_eq!(s["instance_from"], "file_name");
    assert!(
        o.stdout.contains("instance inst-A (from the file name)"),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout
            .contains("3 recycles (max_requests 3), 1 OOM kills"),
        "{}",
        o.stdout
    );
}

#[test]
fn an_instance_flag_names_the_file() {
    let dir = TempDir::new("servers-flag");
    write(dir.path(), "error.log", gunicorn_log());
    let (_, a) = replay(dir.path(), &["error.log", "--instance", "error.log=web-1"]);
    assert_eq!(a["sources"][0]["instance"], "web-1");
    assert_eq!(a["sources"][0]["instance_from"], "flag");
    let o = fleetsim(
        dir.path(),
        &["replay", "error.log", "--instance", "other.log=web-1"],
    );
    assert_eq!(o.code, Some(2));
    assert!(
        o.stderr.contains("not one of the recordings"),
        "{}",
        o.stderr
    );
}

/// 2026-12-01T13:00:00Z in Unix seconds.
const T0: u64 = 1_796_130_000;

#[test]
fn all_sources_at_once_count_each_recycle_once() {
    let dir = TempDir::new("servers-all");
    write(dir.path(), "gunicorn-inst-A.log", gunicorn_log());
    // The recycler's telemetry rows (the seeds' schema), one per
    // max-requests recycle, a few seconds before gunicorn's exit line.
    let rows: String = [(600, 101, 1000), (1800, 103, 1010), (2999, 104, 990)]
        .iter()
        .map(|(dt, pid, req)| {
            format!(
                "{{\"ts\": {}, \"event\": \"worker_recycled\", \"instance\": \"inst-A\", \
                 \"worker\": \"{pid}\", \"rss_mb\": 540.5, \"limit_mb\": 500, \"requests\": {req}, \
                 \"pressure\": false, \"lease\": \"acquired\"}}\n",
                T0 + dt - 2
            )
        })
        .collect();
    write(dir.path(), "telemetry.jsonl", rows);
    write(
        dir.path(),
        "canary.log",
        "2026-12-01T13:10:03Z retry_ok\n2026-12-01T13:30:02Z retry_ok\n",
    );
    // Per-worker RSS from /proc: pid 103 boots at 13:10:01 and grows 0.1 MB a request.
    let mut rss = String::from("ts,instance,worker,rss_mb,requests\n");
    for k in 0..10u64 {
        rss += &format!(
            "{},inst-A,103,{},{}\n",
            T0 + 610 + 60 * k,
            410 + 6 * k,
            60 * k
        );
    }
    write(dir.path(), "rss.csv", rss);
    let (o, a) = replay(
        dir.path(),
        &[
            "telemetry.jsonl",
            "gunicorn-inst-A.log",
            "canary.log",
            "rss.csv",
        ],
    );
    let t = &a["totals"];
    assert_eq!(t["recycles"], 3, "joined, not 6: {t}");
    assert_eq!(t["oom_kills"], 1);
    let g = &a["joins"]["agreements"][0];
    assert_eq!(
        (&g["source"], &g["with"], &g["kind"]),
        (
            &Value::from("gunicorn-inst-A.log"),
            &Value::from("telemetry.jsonl"),
            &Value::from("worker_recycled")
        )
    );
    assert_eq!(
        (g["matched"].clone(), g["events"].clone()),
        (3.into(), 3.into())
    );
    assert!(
        o.stdout.contains(
            "gunicorn-inst-A.log: 3 of 3 worker_recycled matched rows of telemetry.jsonl"
        ),
        "{}",
        o.stdout
    );
    let r = &a["rss_series"];
    assert_eq!(r["lifetimes_from_spawn"], 1, "{r}");
    assert_eq!(r["boot_rss_mb"]["median"], 410.0);
    assert!((r["mb_per_request"]["median"].as_f64().unwrap() - 0.1).abs() < 1e-9);
    assert!(o.stdout.contains("boot RSS observed"), "{}", o.stdout);
    let warnings = a["warnings"].to_string();
    assert!(!warnings.contains("counted twice"), "{warnings}");
}

#[test]
fn the_same_file_twice_is_refused() {
    let dir = TempDir::new("servers-twice");
    write(dir.path(), "a.log", gunicorn_log());
    write(dir.path(), "b.log", gunicorn_log());
    let o = fleetsim(dir.path(), &["replay", "a.log", "b.log", "--out", "out"]);
    assert_eq!(o.code, Some(2), "{}", o.stdout);
    assert!(
        o.stderr.contains("b.log: the same content as a.log"),
        "{}",
        o.stderr
    );
}

#[test]
fn hostile_server_logs_fail_cleanly_naming_file_and_line() {
    let dir = TempDir::new("servers-hostile");
    // A 4 MB line among gunicorn's: counted and listed (cut to 200
    // characters), the rest read.
    let mut huge = gunicorn_log();
    huge.insert_str(0, &format!("{}\n", "x".repeat(4 << 20)));
    write(dir.path(), "huge.log", huge);
    let (_, a) = replay(dir.path(), &["huge.log"]);
    assert_eq!(a["totals"]["recycles"], 3);
    assert_eq!(a["sources"][0]["unparsed_count"], 1);
    assert_eq!(a["sources"][0]["unparsed"][0]["line"], 1);
    // Invalid UTF-8 on line 3.
    let mut bad = gunicorn_log().into_bytes();
    let third = bad
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .nth(1)
        .unwrap()
        .0;
    bad.insert(third + 2, 0xff);
    write(dir.path(), "bad.log", bad);
    let o = fleetsim(dir.path(), &["replay", "bad.log"]);
    assert_eq!(o.code, Some(2));
    assert!(o.stderr.contains("bad.log:3: not UTF-8"), "{}", o.stderr);
    // A truncated Prometheus response.
    write(
        dir.path(),
        "cut.json",
        "{\"status\":\"success\",\n\"data\":{\"resultType\":\"matrix\",\"result\":[{\"metric\":{\"pid\":\"1\"},\"values\":[[1764594000,\"4",
    );
    let o = fleetsim(dir.path(), &["replay", "cut.json"]);
    assert_eq!(o.code, Some(2));
    assert!(
        o.stderr.contains("cut.json:2: not a Prometheus response"),
        "{}",
        o.stderr
    );
    // A negative RSS in the series CSV.
    write(
        dir.path(),
        "neg.csv",
        "ts,instance,worker,rss_mb\n1764594000,a,1,-500\n",
    );
    let o = fleetsim(dir.path(), &["replay", "neg.csv"]);
    assert_eq!(o.code, Some(2));
    assert!(
        o.stderr.contains("neg.csv:2: column `rss_mb`"),
        "{}",
        o.stderr
    );
}

#[test]
fn a_figure_past_what_a_recording_holds_is_a_refused_line_not_clamped() {
    // A count past 64 bits was clamped to u64::MAX (platform logs) or cut
    // to its first 20 digits (server logs); an RSS of `inf` MB or 2^64
    // bytes went through. Each line is now listed as unparsed, with its
    // number and why, the file's other lines read, as for `rss=1e308`.
    let dir = TempDir::new("servers-huge-figures");
    let huge = "123456789012345678901234";
    let cases = [
        (
            "platform.log",
            format!(
                "20:17:02 RECYCLE inst-A rss=564 lim=507 after=410req\n\
                 20:19:18 RECYCLE inst-B rss=541 lim=498 after={huge}req\n"
            ),
            "is beyond any request count (at most 18446744073709551615)",
        ),
        (
            "uvicorn.log",
            format!(
                "2026-12-01T13:00:00Z INFO:     Maximum request limit of 500 exceeded. Terminating process.\n\
                 2026-12-01T13:10:00Z INFO:     Maximum request limit of {huge} exceeded. Terminating process.\n"
            ),
            "the limit 123456789012345678901234 is beyond any count",
        ),
        (
            "uwsgi.log",
            format!(
                "Tue Dec  1 13:00:00 2026 - ...The work of process 201 is done (max requests reached (1000 >= 1000)). Seeya!\n\
                 Tue Dec  1 13:05:00 2026 - ...The work of process 202 is done (max requests reached ({huge} >= 1000)). Seeya!\n"
            ),
            "the requests 123456789012345678901234 is beyond any count",
        ),
        (
            "uwsgi-evil.log",
            "Tue Dec  1 13:00:00 2026 - ...The work of process 201 is done (max requests reached (1000 >= 1000)). Seeya!\n\
             Tue Dec  1 13:05:00 2026 - *** EVIL RELOAD ON WORKER 1 RSS: 18446744073709551615 (pid: 77) ***\n"
                .to_string(),
            "the RSS 1.7592186044416e13 MB is beyond any host's memory",
        ),
        (
            "passenger.log",
            format!(
                "[ D 2026-12-01 13:00:00.1234 987/T5 age/Cor/App/Group/SessionManagement.cpp:219 ]: Process (pid=5678, group=/app (production)) has reached its maximum number of requests (1000); detaching it\n\
                 [ D 2026-12-01 13:05:00.1234 987/T5 age/Cor/App/Group/SessionManagement.cpp:219 ]: Process (pid=5679, group=/app (production)) has reached its maximum number of requests ({huge}); detaching it\n"
            ),
            "the maximum 123456789012345678901234 is beyond any count",
        ),
        (
            "puma.log",
            "2026-12-01T13:00:00Z [4242] PumaWorkerKiller: Out of memory. 2 workers consuming total: 1600.25 mb out of max: 1536.0 mb. Sending TERM to pid 4250 consuming 700.5 mb.\n\
             2026-12-01T13:00:10Z [4242] PumaWorkerKiller: Out of memory. 2 workers consuming total: 1600.25 mb out of max: 1536.0 mb. Sending TERM to pid 4251 consuming inf mb.\n"
                .to_string(),
            "the worker's inf MB is not a memory size",
        ),
    ];
    for (name, text, why) in cases {
        write(dir.path(), name, text);
        let (o, a) = replay(dir.path(), &[name]);
        let source = &a["sources"][0];
        assert_eq!(source["unparsed_count"], 1, "{name}: {source}");
        assert_eq!(source["unparsed"][0]["line"], 2, "{name}: {source}");
        let reason = source["unparsed"][0]["reason"].as_str().unwrap();
        assert!(reason.contains(why), "{name}: {reason}");
        assert_eq!(a["totals"]["recycles"], 1, "{name}");
        assert!(
            o.stdout.contains(&format!("{name}: 1 unparsed lines")),
            "{name}: {}",
            o.stdout
        );
        for clamped in ["18446744073709551615 ", "12345678901234567", "inf MB at"] {
            let peak = o
                .stdout
                .lines()
                .filter(|l| l.contains("requests per worker") || l.contains("peak RSS"));
            assert!(
                peak.clone().all(|l| !l.contains(clamped)),
                "{name}: {clamped}"
            );
        }
    }
}

#[test]
fn a_prometheus_response_of_a_million_points_stays_bounded() {
    let dir = TempDir::new("servers-prometheus");
    let mut text =
        String::from("{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[");
    for w in 0..100u64 {
        if w > 0 {
            text.push(',');
        }
        text += &format!(
            "{{\"metric\":{{\"__name__\":\"process_resident_memory_bytes\",\"pod\":\"web-{}\",\"pid\":\"{w}\"}},\"values\":[",
            w % 2
        );
        for k in 0..10_000u64 {
            if k > 0 {
                text.push(',');
            }
            text += &format!("[{},\"{}\"]", T0 + k * 15, 400 * 1_048_576 + k * 4096);
        }
        text += "]}";
    }
    text += "]}}";
    write(dir.path(), "q.json", &text);
    let start = std::time::Instant::now();
    let (_, a) = replay(dir.path(), &["q.json"]);
    assert_eq!(a["sources"][0]["samples"], 1_000_000);
    assert_eq!(a["rss_series"]["keys"], 100);
    assert!(start.elapsed().as_secs() < 120, "{:?}", start.elapsed());
}
