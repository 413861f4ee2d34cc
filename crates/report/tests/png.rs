//! Charts rendered to PNG with the system's fonts: real images of the size
//! asked for, with text drawn (a chart whose labels vanished would still be
//! a valid PNG, so the pixels are checked).

mod common;

use resvg::tiny_skia::Pixmap;
use throng_report::png::PngRenderer;
use throng_report::Analysis;

/// Dark pixels in a region: text and axes are drawn in #1f2328 on white.
fn dark_pixels(p: &Pixmap, x0: u32, y0: u32, x1: u32, y1: u32) -> usize {
    let mut n = 0;
    for y in y0..y1 {
        for x in x0..x1 {
            let c = p.pixel(x, y).unwrap();
            if c.red() < 100 && c.green() < 100 && c.blue() < 100 {
                n += 1;
            }
        }
    }
    n
}

#[test]
fn charts_render_to_png_with_text() {
    let run = common::rich_run();
    let a = Analysis::of(&run);
    let r =
        PngRenderer::with_system_fonts().expect("system fonts (apt-get install fonts-dejavu-core)");
    for c in &a.charts {
        let png = r.render(&c.id, &c.svg, 2.0).unwrap();
        let p = Pixmap::decode_png(&png).unwrap();
        assert_eq!(p.width(), 1520, "{}", c.id);
        let h = p.height();
        if c.id.starts_with("throughput") || c.id.starts_with("latency") {
            assert_eq!(h, 840, "{}", c.id);
        }
        // The title sits in the top band (y 8..28 at scale 1): no text, no
        // dark pixels there.
        assert!(
            dark_pixels(&p, 20, 16, 700, 56) > 300,
            "{}: title not drawn",
            c.id
        );
        // Background is opaque white in the corner.
        let corner = p.pixel(2, 2).unwrap();
        assert_eq!(
            (corner.red(), corner.green(), corner.blue(), corner.alpha()),
            (255, 255, 255, 255)
        );
    }
}

#[test]
fn hostile_text_renders_as_text() {
    let mut run = common::rich_run();
    run.servers[0].name = "<script>&amp;\"x\"</script>".into();
    for s in &mut run.steps {
        if s.server == "nginx" {
            s.server = run.servers[0].name.clone();
        }
    }
    let a = Analysis::of(&run);
    let r = PngRenderer::with_system_fonts().unwrap();
    for c in &a.charts {
        // Would fail to parse if the name were inserted unescaped.
        r.render(&c.id, &c.svg, 1.0).unwrap();
    }
}
