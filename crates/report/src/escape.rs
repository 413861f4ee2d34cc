//! Escaping for every output format. Anything that came from outside the
//! report (server banners, URLs, file names, error text, configs, study
//! names) goes through one of these before it reaches the output.

/// Text for XML and HTML, in element content and in quoted attributes.
pub fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters other than tab and newlines are not allowed
            // in XML 1.0 and would make an SVG unreadable.
            c if c.is_control() && c != '\t' && c != '\n' && c != '\r' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// Text inside a Markdown table cell: no markup, no cell breaks, no raw HTML.
pub fn md_cell(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '#' | '|' | '~' | '!' => {
                out.push('\\');
                out.push(c);
            }
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\n' | '\r' => out.push(' '),
            c if c.is_control() => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// A fenced code block that no backtick run inside `content` can close.
pub fn md_fence(content: &str, lang: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in content.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    let fence = "`".repeat(longest.max(2) + 1);
    let body = content.strip_suffix('\n').unwrap_or(content);
    format!("{fence}{lang}\n{body}\n{fence}\n")
}

/// One CSV field (RFC 4180). Text that a spreadsheet would run as a formula
/// is prefixed with a quote so it stays text.
pub fn csv_text(s: &str) -> String {
    let s = if s.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{s}")
    } else {
        s.to_string()
    };
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s
    }
}

/// A name safe in a file name: lowercase letters, digits and dashes.
pub fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    let out = out.trim_end_matches('-').to_string();
    if out.is_empty() {
        "x".to_string()
    } else if out.len() > MAX_SLUG {
        // A name made from a long URL path made a file name past the
        // file system's 255 bytes; the hash keeps long names apart.
        let hash = s.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        });
        format!(
            "{}-{:08x}",
            out[..MAX_SLUG - 9].trim_end_matches('-'),
            hash as u32
        )
    } else {
        out
    }
}

/// Longest slug: with a chart's prefix and `.png`, well inside a file
/// name's 255 bytes.
const MAX_SLUG: usize = 96;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_escapes_markup_and_quotes() {
        assert_eq!(
            xml("<script>alert(\"x\" & 'y')</script>\u{1}"),
            "&lt;script&gt;alert(&quot;x&quot; &amp; &#39;y&#39;)&lt;/script&gt;\u{fffd}"
        );
    }

    #[test]
    fn markdown_cells_cannot_break_tables_or_inject_html() {
        assert_eq!(
            md_cell("a|b\n<i>*x*</i>"),
            "a\\|b &lt;i&gt;\\*x\\*&lt;/i&gt;"
        );
        assert_eq!(
            md_fence("x ```` y\n", "toml"),
            "`````toml\nx ```` y\n`````\n"
        );
        assert_eq!(md_fence("plain", ""), "```\nplain\n```\n");
    }

    #[test]
    fn csv_quotes_and_defuses_formulas() {
        assert_eq!(csv_text("nginx"), "nginx");
        assert_eq!(csv_text("a,\"b\""), "\"a,\"\"b\"\"\"");
        assert_eq!(csv_text("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
    }

    #[test]
    fn slugs_are_file_safe() {
        assert_eq!(slug("Small Files/../etc"), "small-files-etc");
        assert_eq!(slug("<>"), "x");
        let long = format!("/{}", "a".repeat(300));
        let (a, b) = (slug(&long), slug(&format!("{long}b")));
        assert!(a.len() <= MAX_SLUG && b.len() <= MAX_SLUG, "{a}");
        assert_ne!(a, b);
        assert_eq!(a, slug(&long), "stable");
    }
}
