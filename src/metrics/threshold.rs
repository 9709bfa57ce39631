//! Thresholds on a run's summary in the style of k6 (`fleetsim run
//! --fail-if 'fetch_failed_per_hour > 0.1'`): `METRIC OP NUMBER`, where
//! METRIC is a summary.json metric, or any count metric with `_per_hour`
//! appended (divided by the run's simulated hours), and OP one of `>`,
//! `>=`, `<`, `<=`, `==`, `!=`. A threshold *fails* the run when its
//! comparison holds, or when the metric has no value in the run (no
//! recycles, no latency): a gate that cannot tell does not pass.

use super::Summary;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Gt,
    Ge,
    Lt,
    Le,
    Eq,
    Ne,
}

impl Op {
    fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Op::Gt => a > b,
            Op::Ge => a >= b,
            Op::Lt => a < b,
            Op::Le => a <= b,
            Op::Eq => a == b,
            Op::Ne => a != b,
        }
    }

    fn text(self) -> &'static str {
        match self {
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Eq => "==",
            Op::Ne => "!=",
        }
    }
}

/// One parsed `--fail-if` expression.
#[derive(Clone, Debug, PartialEq)]
pub struct Threshold {
    /// The expression as given.
    pub text: String,
    pub metric: String,
    pub op: Op,
    pub value: f64,
}

/// How a metric name is read from a summary.
fn lookup(summary: &Summary, metric: &str) -> Option<f64> {
    let metrics = summary.metrics();
    let get = |name: &str| metrics.iter().find(|(k, _)| k == name).map(|(_, v)| *v);
    if let Some(v) = get(metric) {
        return Some(v);
    }
    let base = metric.strip_suffix("_per_hour")?;
    // A rate of a count: a count's name carries no unit and no rate.
    if base.ends_with("_fraction") || base.ends_with("_mb") || base.ends_with("_s") {
        return None;
    }
    get(base).map(|v| v / summary.duration_h)
}

/// Parses `METRIC OP NUMBER`; the error names the expression and what is
/// wrong with it (an unknown metric lists the way to see the names).
pub fn parse(text: &str) -> Result<Threshold, String> {
    let bad = |why: String| format!("--fail-if `{}`: {why}", crate::text::one_line(text));
    let ops = [
        (">=", Op::Ge),
        ("<=", Op::Le),
        ("==", Op::Eq),
        ("!=", Op::Ne),
        (">", Op::Gt),
        ("<", Op::Lt),
    ];
    let (at, len, op) = ops
        .iter()
        .filter_map(|(s, op)| text.find(s).map(|i| (i, s.len(), *op)))
        .min_by_key(|(i, len, _)| (*i, usize::MAX - len))
        .ok_or_else(|| {
            bad("expected METRIC OP NUMBER with OP one of > >= < <= == !=, \
                 e.g. 'fetch_failed_per_hour > 0.1'"
                .into())
        })?;
    let metric = text[..at].trim();
    let number = text[at + len..].trim();
    if metric.is_empty()
        || !metric
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return Err(bad(format!(
            "`{metric}` is not a metric name (letters, digits and _)"
        )));
    }
    let value: f64 = number
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite())
        .ok_or_else(|| bad(format!("`{number}` is not a finite number")))?;
    let probe = Summary::metric_names();
    let known = probe.iter().any(|m| m == metric)
        || metric.strip_suffix("_per_hour").is_some_and(|b| {
            probe.iter().any(|m| m == b)
                && !(b.ends_with("_fraction") || b.ends_with("_mb") || b.ends_with("_s"))
        });
    if !known {
        return Err(bad(format!(
            "unknown metric `{metric}`: use a key of summary.json (a number), or a count \
             with _per_hour appended, e.g. fetch_failed_per_hour"
        )));
    }
    Ok(Threshold {
        text: text.trim().to_string(),
        metric: metric.to_string(),
        op,
        value,
    })
}

/// The failed thresholds of a run, each as one sentence with the value.
pub fn failures(summary: &Summary, thresholds: &[Threshold]) -> Vec<String> {
    thresholds
        .iter()
        .filter_map(|t| match lookup(summary, &t.metric) {
            Some(v) if v.is_nan() => Some(format!(
                "`{}`: {} has no value in this run",
                t.text, t.metric
            )),
            Some(v) if t.op.holds(v, t.value) => Some(format!(
                "`{}`: {} = {v} {} {}",
                t.text,
                t.metric,
                t.op.text(),
                t.value
            )),
            Some(_) => None,
            None => Some(format!(
                "`{}`: {} has no value in this run",
                t.text, t.metric
            )),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expressions_parse_and_bad_ones_name_themselves() {
        let t = parse("fetch_failed_per_hour > 0.1").unwrap();
        assert_eq!(
            (t.metric.as_str(), t.op, t.value),
            ("fetch_failed_per_hour", Op::Gt, 0.1)
        );
        assert_eq!(parse("oom_kills>=1").unwrap().op, Op::Ge);
        assert_eq!(parse(" max_rss_mb <= 700 ").unwrap().op, Op::Le);
        assert_eq!(parse("recycles != 3").unwrap().op, Op::Ne);
        for (bad, says) in [
            ("fetch_failed_per_hour 0.1", "expected METRIC OP NUMBER"),
            ("fetched > 1", "unknown metric `fetched`"),
            ("max_rss_mb_per_hour > 1", "unknown metric"),
            ("oom_kills > lots", "`lots` is not a finite number"),
            ("oom_kills > inf", "not a finite number"),
            ("> 3", "is not a metric name"),
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains(&format!("`{bad}`")) && e.contains(says), "{e}");
        }
    }

    #[test]
    fn a_threshold_fails_when_its_comparison_holds_or_it_has_no_value() {
        let hours = crate::scenario::parse_override("run.duration_h=2").unwrap();
        let (_, sc) = crate::scenario::load(
            crate::scenario::DEFAULT_SCENARIO,
            "default",
            &[hours],
            &mut |_| Err("no files".into()),
        )
        .unwrap();
        let s = crate::run_summary(&sc, 1).unwrap();
        let per_hour = s.retry_ok as f64 / s.duration_h;
        let at = |op: &str, v: f64| parse(&format!("retry_ok_per_hour {op} {v}")).unwrap();
        assert!(failures(&s, &[at(">", per_hour - 0.01)]).len() == 1);
        assert!(failures(&s, &[at(">", per_hour + 0.01)]).is_empty());
        assert!(failures(&s, &[at("<", per_hour + 0.01)]).len() == 1);
        let f = failures(&s, &[at(">=", per_hour), parse("oom_kills > 1e9").unwrap()]);
        assert_eq!(f.len(), 1);
        assert!(f[0].contains("retry_ok_per_hour = "), "{}", f[0]);
    }
}
