//! Charts as PNG images for articles (`throng report --png DIR`).
//!
//! The only input this crate reads from the machine is fonts: text in an
//! SVG needs them to become pixels, and a chart without its labels would be
//! worse than none, so rendering refuses to run without any.

use std::sync::Arc;

use resvg::{tiny_skia, usvg};

use crate::error::{ReportError, Result};

pub struct PngRenderer {
    fontdb: Arc<usvg::fontdb::Database>,
}

impl PngRenderer {
    /// A renderer using the system's fonts, preferring DejaVu Sans (Debian's
    /// fonts-dejavu-core) for the charts' sans-serif text.
    pub fn with_system_fonts() -> Result<PngRenderer> {
        let mut db = usvg::fontdb::Database::new();
        db.load_system_fonts();
        Self::with_fonts(db)
    }

    pub fn with_fonts(mut db: usvg::fontdb::Database) -> Result<PngRenderer> {
        if db.is_empty() {
            return Err(ReportError::Png {
                id: String::new(),
                message: "no fonts found, so chart text cannot be drawn; on Debian: apt-get install fonts-dejavu-core".into(),
            });
        }
        let has = |family: &str| {
            db.faces()
                .any(|f| f.families.iter().any(|(name, _)| name == family))
        };
        if let Some(family) = ["DejaVu Sans", "Liberation Sans"]
            .into_iter()
            .find(|f| has(f))
        {
            db.set_sans_serif_family(family);
        }
        Ok(PngRenderer {
            fontdb: Arc::new(db),
        })
    }

    /// The SVG as a PNG at `scale` (2.0 gives sharp images on dense screens).
    pub fn render(&self, id: &str, svg: &str, scale: f32) -> Result<Vec<u8>> {
        let err = |message: String| ReportError::Png {
            id: id.to_string(),
            message,
        };
        let opt = usvg::Options {
            fontdb: self.fontdb.clone(),
            ..usvg::Options::default()
        };
        let tree = usvg::Tree::from_str(svg, &opt).map_err(|e| err(e.to_string()))?;
        let size = tree
            .size()
            .to_int_size()
            .scale_by(scale)
            .ok_or_else(|| err("empty image".into()))?;
        let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height())
            .ok_or_else(|| err("image too large".into()))?;
        resvg::render(
            &tree,
            tiny_skia::Transform::from_scale(scale, scale),
            &mut pixmap.as_mut(),
        );
        pixmap.encode_png().map_err(|e| err(e.to_string()))
    }
}
