//! `{{name}}` placeholders, as recipes and their probe settings use them.

use anyhow::anyhow;

/// `line` with every `{{key}}` replaced by `value(key)`; an unknown key or
/// an unclosed placeholder is an error, so a typo fails when the recipe
/// loads rather than reaching a server's config.
pub fn substitute(line: &str, value: impl Fn(&str) -> Option<String>) -> anyhow::Result<String> {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(open) = rest.find("{{") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        let close = after
            .find("}}")
            .ok_or_else(|| anyhow!("unclosed placeholder"))?;
        let key = after[..close].trim();
        let v = value(key).ok_or_else(|| anyhow!("unknown placeholder {{{{{key}}}}}"))?;
        out.push_str(&v);
        rest = &after[close + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The first placeholder of `line` that `known` does not know, as written
/// (`{{ prot }}`), or an unclosed `{{` with the rest of the line: what
/// [`substitute`] would fail on, found before any value exists.
pub fn unknown(line: &str, known: impl Fn(&str) -> bool) -> Option<&str> {
    let mut rest = line;
    while let Some(open) = rest.find("{{") {
        let after = &rest[open + 2..];
        let Some(close) = after.find("}}") else {
            return Some(&rest[open..]);
        };
        if !known(after[..close].trim()) {
            return Some(&rest[open..open + close + 4]);
        }
        rest = &after[close + 2..];
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_finds_what_substitute_would_refuse() {
        let known = |k: &str| k == "port";
        assert_eq!(unknown("listen {{port}};", known), None);
        assert_eq!(
            unknown("a {{ port }} b {{ prot }} c", known),
            Some("{{ prot }}")
        );
        assert_eq!(unknown("x {{port", known), Some("{{port"));
        for line in ["a {{ prot }} c", "x {{port"] {
            let value = |k: &str| known(k).then(|| "1".to_string());
            assert!(substitute(line, value).is_err(), "{line}");
        }
    }
}
