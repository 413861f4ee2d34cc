//! A JUnit XML report of thresholds judged, the one format every CI
//! system reads test results from: one test case per threshold (per
//! step and threshold in a study), a failure where one was crossed.

/// One test case: a threshold as judged.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// What it belongs to: `throng.load`, or a study's step.
    pub class: String,
    /// The threshold's expression.
    pub name: String,
    /// The line saying how it was crossed; `None` when it held.
    pub failure: Option<String>,
}

/// The whole document, one suite named `suite`.
pub fn document(suite: &str, cases: &[Case], time_s: f64) -> String {
    let failures = cases.iter().filter(|c| c.failure.is_some()).count();
    let mut o = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let head = format!(
        "name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\"",
        escape(suite),
        cases.len()
    );
    o.push_str(&format!("<testsuites {head}>\n"));
    o.push_str(&format!(
        "  <testsuite {head} skipped=\"0\" time=\"{time_s:.3}\">\n"
    ));
    for c in cases {
        let open = format!(
            "    <testcase classname=\"{}\" name=\"{}\"",
            escape(&c.class),
            escape(&c.name)
        );
        match &c.failure {
            None => o.push_str(&format!("{open}/>\n")),
            Some(why) => {
                let why = escape(why);
                o.push_str(&format!(
                    "{open}>\n      <failure type=\"threshold\" message=\"{why}\">{why}</failure>\n    </testcase>\n"
                ));
            }
        }
    }
    o.push_str("  </testsuite>\n</testsuites>\n");
    o
}

/// Text for an attribute or an element: the five markup characters as
/// entities, and characters XML 1.0 cannot hold at all left out.
fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            '\t' | '\n' | '\r' => o.push(c),
            c if c.is_control() => {}
            c => o.push(c),
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_case_per_threshold_and_a_failure_where_crossed() {
        let cases = [
            Case {
                class: "throng.load".into(),
                name: "p99<50ms".into(),
                failure: Some("threshold p99<50ms crossed: p99 was 73.213 ms".into()),
            },
            Case {
                class: "throng.load".into(),
                name: "errors<=1%".into(),
                failure: None,
            },
        ];
        assert_eq!(
            document("throng load", &cases, 5.0),
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <testsuites name=\"throng load\" tests=\"2\" failures=\"1\" errors=\"0\">\n  \
             <testsuite name=\"throng load\" tests=\"2\" failures=\"1\" errors=\"0\" skipped=\"0\" time=\"5.000\">\n    \
             <testcase classname=\"throng.load\" name=\"p99&lt;50ms\">\n      \
             <failure type=\"threshold\" message=\"threshold p99&lt;50ms crossed: p99 was 73.213 ms\">\
             threshold p99&lt;50ms crossed: p99 was 73.213 ms</failure>\n    </testcase>\n    \
             <testcase classname=\"throng.load\" name=\"errors&lt;=1%\"/>\n  \
             </testsuite>\n</testsuites>\n"
        );
    }

    #[test]
    fn markup_is_escaped_and_control_characters_left_out() {
        assert_eq!(escape("a<b>&\"c'\u{1}d"), "a&lt;b&gt;&amp;&quot;c&apos;d");
    }
}
