//! The Prometheus classic text exposition format (version 0.0.4): metric
//! families with `# HELP` and `# TYPE`, labels escaped, numbers spelled as
//! the format wants. Written here rather than with the `prometheus-client`
//! crate: that crate emits OpenMetrics (`# TYPE x counter` over `x_total`
//! samples, `# EOF`), which the classic text parsers of node_exporter's
//! textfile collector and `promtool check metrics` read as a metric without
//! help text. The classic format is a few lines of escaping;
//! `tests/it/status.rs` checks the output with `promtool`.

use std::fmt::Write as _;

/// Content type of the classic text exposition format.
pub(crate) const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A metric family: name, type, help.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Metric {
    pub(crate) name: &'static str,
    pub(crate) kind: &'static str,
    pub(crate) help: &'static str,
}

pub(crate) const fn gauge(name: &'static str, help: &'static str) -> Metric {
    Metric {
        name,
        kind: "gauge",
        help,
    }
}

pub(crate) const fn counter(name: &'static str, help: &'static str) -> Metric {
    Metric {
        name,
        kind: "counter",
        help,
    }
}

/// Samples grouped by family, written in the classic text format.
#[derive(Debug, Default)]
pub(crate) struct Exposition {
    families: Vec<(Metric, Vec<Sample>)>,
}

/// One sample: its name suffix (`_bucket`, ... or none), rendered labels, value.
type Sample = (&'static str, String, f64);

impl Exposition {
    /// Add one sample of `metric` with these labels.
    pub(crate) fn add(&mut self, metric: Metric, labels: &[(&str, &str)], value: f64) {
        self.add_suffixed(metric, "", labels, value);
    }

    /// Add one sample named `metric` + `suffix` (a histogram's `_bucket`,
    /// `_sum`, `_count`) under `metric`'s family.
    pub(crate) fn add_suffixed(
        &mut self,
        metric: Metric,
        suffix: &'static str,
        labels: &[(&str, &str)],
        value: f64,
    ) {
        let mut rendered = String::new();
        for (i, (name, value)) in labels.iter().enumerate() {
            let sep = if i == 0 { "" } else { "," };
            let _ = write!(rendered, "{sep}{name}=\"{}\"", escape_label(value));
        }
        match self
            .families
            .iter_mut()
            .find(|(m, _)| m.name == metric.name)
        {
            Some((_, samples)) => samples.push((suffix, rendered, value)),
            None => self
                .families
                .push((metric, vec![(suffix, rendered, value)])),
        }
    }

    /// The exposition text: `# HELP`, `# TYPE`, then the samples of each family.
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        for (metric, samples) in &self.families {
            let help = metric.help.replace('\\', "\\\\").replace('\n', "\\n");
            let _ = writeln!(out, "# HELP {} {help}", metric.name);
            let _ = writeln!(out, "# TYPE {} {}", metric.name, metric.kind);
            for (suffix, labels, value) in samples {
                let _ = writeln!(
                    out,
                    "{}{suffix}{{{labels}}} {}",
                    metric.name,
                    number(*value)
                );
            }
        }
        out
    }
}

/// Label values escape `\`, `"` and newlines.
fn escape_label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Integers without a fraction; the format's spellings of NaN and infinities.
fn number(value: f64) -> String {
    if value.is_nan() {
        "NaN".into()
    } else if value.is_infinite() {
        if value > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        format!("{value}")
    }
}
