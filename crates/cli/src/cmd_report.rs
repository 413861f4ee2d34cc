//! `throng report [RUN]`: the benchmark article of a stored run.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use throng_report::{png::PngRenderer, Analysis, Exporter, Format, MarkdownExporter};

#[derive(clap::Args)]
pub struct ReportArgs {
    /// Run id; default: the latest run in the database.
    pub run: Option<i64>,
    /// Results database written by `throng lab`.
    #[arg(long, default_value = "throng.db", value_parser = crate::args::out_path)]
    pub db: PathBuf,
    /// html, md, csv or json. Default: from the extension of -o (another
    /// extension is refused), html for a file without one, md for standard
    /// output.
    #[arg(long, value_parser = clap::builder::ValueParser::new(parse_format))]
    pub format: Option<Format>,
    /// Write the report to FILE instead of standard output.
    #[arg(short = 'o', long, value_name = "FILE", value_parser = crate::args::out_path)]
    pub output: Option<PathBuf>,
    /// Also write every chart as DIR/<chart>.png (Markdown reports link them).
    #[arg(long, value_name = "DIR", value_parser = crate::args::out_path)]
    pub png: Option<PathBuf>,
    /// Also write each profiled server's flame graph, and each compared
    /// pair's differential per request, as DIR/<name>.svg.
    #[arg(long, value_name = "DIR", value_parser = crate::args::out_path)]
    pub flamegraphs: Option<PathBuf>,
    /// JSON only: keep each profile's folded stacks (`folded_gz`), left
    /// out otherwise.
    #[arg(long)]
    pub stacks: bool,
}

fn parse_format(s: &str) -> Result<Format, String> {
    s.parse()
}

/// Opens the database without creating one where none was meant to be.
pub fn open_store(db: &Path) -> anyhow::Result<throng_store::Store> {
    if !db.exists() {
        anyhow::bail!(
            "no results database at {}: run `throng lab STUDY` first, or pass --db",
            db.display()
        );
    }
    existing(db)
}

/// Opens a database that a command only reads: an empty file (which
/// SQLite would take for a new database and fill with the schema) or
/// anything but a file is refused, and left as it was.
pub fn existing(db: &Path) -> anyhow::Result<throng_store::Store> {
    let meta = std::fs::metadata(db).with_context(|| format!("open {}", db.display()))?;
    if !meta.is_file() {
        anyhow::bail!("{} is not a results database: not a file", db.display());
    }
    if meta.len() == 0 {
        anyhow::bail!("{} is not a results database: it is empty", db.display());
    }
    throng_store::Store::open(db)
}

pub fn load(
    store: &throng_store::Store,
    run: Option<i64>,
) -> anyhow::Result<throng_model::RunData> {
    let id = match run {
        Some(id) => id,
        None => store
            .latest_run()?
            .context("the database holds no run yet: run `throng lab STUDY` first")?,
    };
    store.load_run(id).with_context(|| format!("load run {id}"))
}

/// How the Markdown file should refer to the PNG directory: relative to the
/// file when the directory is below it, as given otherwise.
fn image_link(png: &Path, output: Option<&Path>) -> String {
    let base = output
        .and_then(Path::parent)
        .filter(|p| !p.as_os_str().is_empty());
    match base {
        Some(b) => png
            .strip_prefix(b)
            .map(Path::to_path_buf)
            .or_else(|_| std::path::absolute(png))
            .unwrap_or_else(|_| png.to_path_buf()),
        None => png.to_path_buf(),
    }
    .to_string_lossy()
    .into_owned()
}

pub fn run(args: ReportArgs) -> anyhow::Result<u8> {
    let format = match (args.format, &args.output) {
        (Some(f), _) => f,
        // An extension throng does not write (.pdf, .txt) would get HTML
        // under a name that says otherwise.
        (None, Some(o)) => match o.extension() {
            None => Format::Html,
            Some(_) => Format::from_path(o).ok_or_else(|| {
                anyhow::anyhow!(
                    "-o {}: throng writes html, md, csv or json; name the file so, or give --format",
                    o.display()
                )
            })?,
        },
        (None, None) => Format::Markdown,
    };
    // Before any chart is written: a report that cannot be written left
    // its charts behind.
    if let Some(o) = &args.output {
        let parent = o.parent().filter(|p| !p.as_os_str().is_empty());
        if let Some(p) = parent.filter(|p| !p.is_dir()) {
            let why = if p.exists() {
                "is not a folder"
            } else {
                "does not exist"
            };
            anyhow::bail!("-o {}: the folder {} {why}", o.display(), p.display());
        }
    }
    if args.stacks && format != Format::Json {
        anyhow::bail!("--stacks keeps the folded stacks in a JSON report: add --format json");
    }
    let store = open_store(&args.db)?;
    let data = load(&store, args.run)?;

    let bytes = match format {
        Format::Markdown => MarkdownExporter {
            image_dir: args
                .png
                .as_deref()
                .map(|p| image_link(p, args.output.as_deref())),
        }
        .export(&data)?,
        Format::Json if args.stacks => throng_report::JsonWithStacksExporter.export(&data)?,
        other => other.exporter().export(&data)?,
    };

    if let Some(dir) = &args.png {
        let renderer = PngRenderer::with_system_fonts()?;
        std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
        let analysis = Analysis::of(&data);
        let charts = analysis.every_chart();
        for c in &charts {
            let path = dir.join(format!("{}.png", c.id));
            let png = renderer.render(&c.id, &c.svg, 2.0)?;
            crate::args::write_whole(&path, &png)
                .with_context(|| format!("write {}", path.display()))?;
        }
        eprintln!("wrote {} charts to {}", charts.len(), dir.display());
    }

    if let Some(dir) = &args.flamegraphs {
        std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
        let analysis = Analysis::of(&data);
        let graphs = throng_report::flames::all(&data, &analysis.steps);
        for g in &graphs {
            let path = dir.join(&g.file);
            crate::args::write_whole(&path, g.svg.as_bytes())
                .with_context(|| format!("write {}", path.display()))?;
        }
        eprintln!("wrote {} flame graphs to {}", graphs.len(), dir.display());
    }

    match &args.output {
        Some(path) => {
            crate::args::write_whole(path, &bytes)
                .with_context(|| format!("write {}", path.display()))?;
            eprintln!(
                "wrote the report of run {} to {}",
                data.run.id,
                path.display()
            );
        }
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(&bytes).map_err(crate::stdout_error)?;
            out.flush().map_err(crate::stdout_error)?;
        }
    }
    Ok(0)
}
