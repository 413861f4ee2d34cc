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
