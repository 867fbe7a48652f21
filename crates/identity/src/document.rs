//! Finding the document in the photo: a card- or passport-shaped quadrilateral.
//!
//! Documents arrive three ways, tried in this order:
//!
//! 1. **On a background** (a phone photo of a card on a desk): Canny edges of
//!    each colour channel on a fixed-size copy, closed by one dilation, give
//!    the regions closed off from the frame's edge; each region's minimum-area
//!    rectangle is a candidate when the region fills most of it (a card is
//!    convex and straight-edged). The biggest clear of the frame's edges with
//!    the proportions of an ID card or passport page is the document, when it
//!    is big enough not to be a part (a portrait, a text block) of a document
//!    that fills the frame.
//! 2. **On a page** (a flatbed scan): a frame edged with plain white paper;
//!    the document is the biggest blob of what differs from the paper. Its
//!    share of the frame says nothing of its legibility (the scan's
//!    resolution does), and a blob running into the frame's edge is a
//!    document cut off.
//! 3. **Filling the frame** (a scan or photo cropped to the document): a
//!    frame of a document's proportions, printed on. A slight tilt leaves
//!    small triangles of background in the corners; they are flooded from the
//!    corners and cut away, and what remains gives the outline.
//!
//! When none holds, a big straight-edged region running into the frame's
//! edge means the document is cut off (a straight edge runs out of the
//! frame, a corner is missing); otherwise no document was found.

use image::{GrayImage, RgbImage};
use imageproc::contours::find_contours;
use imageproc::distance_transform::Norm;
use imageproc::geometry::{convex_hull, min_area_rect};
use imageproc::point::Point;

/// Width the photo is scaled to for the search.
pub const WORK_WIDTH: u32 = 320;
/// ID-1 (credit-card size) width over height: 85.60 x 53.98 mm.
pub const ID1_ASPECT: f64 = 85.60 / 53.98;
/// ID-3 / TD3 (passport data page): 125 x 88 mm.
pub const TD3_ASPECT: f64 = 125.0 / 88.0;
/// Aspect under which an outline nearest ID-1 may still be a passport's data
/// page: real ones photographed or cropped measured 1.52 and 1.53 (ICAO's
/// specimen page with its rounded border, an Icelandic passport on a
/// table: tests/tests/e2e/identity_real.rs), nearer ID-1's 1.586 than the
/// 1.420 of the page's nominal size; cards cropped tight measure 1.58.
pub const CARD_SURE_ASPECT: f64 = 1.56;
/// Long side over short side that a document may show, tilt included.
pub(crate) const ASPECT_RANGE: (f64, f64) = (1.33, 1.85);
/// Share of the frame under which a region is not considered at all.
const MIN_CANDIDATE_SHARE: f64 = 0.03;
/// Share of the frame under which the document is too small to read.
pub const MIN_DOCUMENT_SHARE: f64 = 0.15;
/// Contour area over rectangle area for a straight-edged, convex outline.
const MIN_RECTANGULARITY: f64 = 0.85;
/// A rectangle corner within this share of the frame's edge touches it.
pub(crate) const EDGE_MARGIN: f64 = 0.01;
/// A document on a background smaller than this share of the frame may be a
/// part of one filling the frame (its portrait, a text block), so the frame
/// is looked at as a page or a crop first.
const PART_SHARE: f64 = 0.3;
/// Paper: a median luminance at least this, and channels this close.
const PAPER_LUMINANCE: f64 = 190.0;
const PAPER_CHROMA: u8 = 24;
/// Share of the frame's border band within [`PLAIN_TOLERANCE`] of its median
/// colour for the border to be plain paper.
const PLAIN_SHARE: f64 = 0.9;
const PLAIN_TOLERANCE: u8 = 20;
/// A pixel differing from the paper by more than this (any channel) is content.
const CONTENT_TOLERANCE: u8 = 12;
/// Share of edge pixels (before dilation) for a frame to be printed on: the
/// synthetic cards have 8 to 12%, a plain desk photo under 1%.
const MIN_PRINTING: f64 = 0.03;
/// A region flooded from a corner of a frame-filling document that is at
/// most this share of the frame is background left by a tilt or a margin.
const MAX_CORNER_SHARE: f64 = 0.06;
/// Tilt a crop to a document's bounding box may have and still be told by
/// the frame's proportions alone: 3 degrees take ID-1's 1.586 down to 1.51
/// (so 3:2 frames, 1.5, stay outside), TD3's 1.42 to 1.37 (4:3, 1.33, outside).
const MAX_CROP_TILT_DEGREES: f64 = 3.0;
/// Relative deviation from a format's aspect a crop's outline may have,
/// once the corners' background is cut away: clean outlines of the synthetic
/// crops are within 1.2%; one that lost a strip of the document to a corner's
/// flood (an edge the search missed) is not, and is not taken.
const FORMAT_TOLERANCE: f64 = 0.03;

/// How the document sits in the image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// Photographed on a surface, its outline clear of the frame's edges.
    Background,
    /// On a plain white page, as a flatbed scan gives.
    Page,
    /// The image is the document, cropped to it: its edges at or near the frame's.
    Filling,
}

impl Framing {
    pub fn as_str(self) -> &'static str {
        match self {
            Framing::Background => "background",
            Framing::Page => "page",
            Framing::Filling => "filling",
        }
    }
}

/// What the search found.
#[derive(Clone, Debug, PartialEq)]
pub enum Found {
    /// A document clear of the frame's edges.
    Document(Quad),
    /// A large straight-edged region running out of the frame.
    CutOff(Quad),
    Nothing,
}

impl Found {
    /// The same, with coordinates multiplied by `factor`.
    pub fn scaled(self, factor: f64) -> Found {
        let scale = |q: Quad| Quad {
            corners: q.corners.map(|(x, y)| (x * factor, y * factor)),
            ..q
        };
        match self {
            Found::Document(q) => Found::Document(scale(q)),
            Found::CutOff(q) => Found::CutOff(scale(q)),
            Found::Nothing => Found::Nothing,
        }
    }
}

/// A rectangle in coordinates of the photo as decoded.
#[derive(Clone, Debug, PartialEq)]
pub struct Quad {
    /// Corners, clockwise from top left.
    pub corners: [(f64, f64); 4],
    /// Share of the frame it covers.
    pub frame_share: f64,
    /// Long side over short side.
    pub aspect: f64,
    /// Contour area over rectangle area.
    pub rectangularity: f64,
    pub framing: Framing,
}

impl Quad {
    /// The nearest standard format and the relative deviation from its
    /// aspect. TD2 (105 x 74 mm, 1.419) has TD3's proportions within 0.1%:
    /// the outline cannot tell them apart, only the MRZ's line length can.
    pub fn format(&self) -> (&'static str, f64) {
        let id1 = (self.aspect - ID1_ASPECT).abs() / ID1_ASPECT;
        let td3 = (self.aspect - TD3_ASPECT).abs() / TD3_ASPECT;
        if id1 <= td3 {
            ("ID-1", id1)
        } else {
            ("TD3", td3)
        }
    }

    /// An ID-1 card for sure: nearest ID-1 and at least
    /// [`CARD_SURE_ASPECT`], so no passport page; under it, only its zone
    /// (two lines of 44 on a passport page) tells.
    pub fn surely_a_card(&self) -> bool {
        self.format().0 == "ID-1" && self.aspect >= CARD_SURE_ASPECT
    }

    pub fn centre(&self) -> (f64, f64) {
        let (sx, sy) = self
            .corners
            .iter()
            .fold((0.0, 0.0), |(a, b), (x, y)| (a + x, b + y));
        (sx / 4.0, sy / 4.0)
    }

    /// Whether `point` lies inside the rectangle (corners in order, convex).
    pub fn contains(&self, point: (f64, f64)) -> bool {
        convex_contains(&self.corners, point)
    }

    /// Whether a corner lies inside a `width` x `height` frame, clear of its
    /// edges by [`EDGE_MARGIN`] (a corner of a document cut off, seen).
    pub fn has_corner_inside(&self, width: u32, height: u32) -> bool {
        let (w, h) = (f64::from(width), f64::from(height));
        let (mx, my) = (w * EDGE_MARGIN, h * EDGE_MARGIN);
        self.corners
            .iter()
            .any(|&(x, y)| x > mx && y > my && x < w - mx && y < h - my)
    }

    /// Axis-aligned bounds (x, y, width, height), clipped to `width` x `height`.
    pub fn bounds(&self, width: u32, height: u32) -> (u32, u32, u32, u32) {
        let xs = self.corners.map(|c| c.0);
        let ys = self.corners.map(|c| c.1);
        let clip = |v: f64, max: u32| v.clamp(0.0, f64::from(max)) as u32;
        let x0 = clip(xs.iter().copied().fold(f64::INFINITY, f64::min), width);
        let x1 = clip(xs.iter().copied().fold(f64::NEG_INFINITY, f64::max), width);
        let y0 = clip(ys.iter().copied().fold(f64::INFINITY, f64::min), height);
        let y1 = clip(ys.iter().copied().fold(f64::NEG_INFINITY, f64::max), height);
        (x0, y0, x1.saturating_sub(x0), y1.saturating_sub(y0))
    }
}

/// Whether `point` lies inside (or on) the convex quad `c`, corners in order.
pub(crate) fn convex_contains(c: &[(f64, f64); 4], point: (f64, f64)) -> bool {
    let side = |i: usize| {
        let (a, b) = (c[i], c[(i + 1) % 4]);
        (b.0 - a.0) * (point.1 - a.1) - (b.1 - a.1) * (point.0 - a.0)
    };
    let signs = [side(0), side(1), side(2), side(3)];
    signs.iter().all(|s| *s >= 0.0) || signs.iter().all(|s| *s <= 0.0)
}

/// Looks for the document in `rgb` (the whole photo, any size).
pub fn find(rgb: &RgbImage) -> Found {
    let (w, h) = rgb.dimensions();
    if w < 8 || h < 8 {
        return Found::Nothing;
    }
    let small = crate::to_width(rgb, WORK_WIDTH);
    let scale = f64::from(w) / f64::from(WORK_WIDTH);
    let raw_edges = colour_edges(&small);
    let edges = imageproc::morphology::dilate(&raw_edges, Norm::LInf, 1);
    // Documents clear of the frame: regions closed off from the frame's edge,
    // opened so that a stray line of the background touching the outline
    // does not become part of it.
    let enclosed = imageproc::morphology::open(&enclosed_regions(&edges), Norm::LInf, 3);
    let document = candidates(&enclosed, scale)
        .filter(|(quad, touches)| {
            !touches && (ASPECT_RANGE.0..=ASPECT_RANGE.1).contains(&quad.aspect)
        })
        .map(|(quad, _)| quad)
        .max_by(|a, b| a.frame_share.total_cmp(&b.frame_share));
    // A document running out of the frame: straight-edged outlines touching it.
    let cut = candidates(&edges, scale)
        .filter(|(quad, touches)| *touches && quad.frame_share <= 0.97)
        .map(|(quad, _)| quad)
        .max_by(|a, b| a.frame_share.total_cmp(&b.frame_share));
    if document
        .as_ref()
        .is_some_and(|d| d.frame_share >= PART_SHARE)
    {
        return on_background(document, cut);
    }
    if let Some(found) = on_page(&small, &raw_edges, scale) {
        return found;
    }
    if let Some(quad) = filling(&raw_edges, &edges, scale) {
        return Found::Document(quad);
    }
    let cut = cut.or_else(|| beyond_background(&edges, scale));
    on_background(document, cut)
}

/// A document with a corner out of the frame, whose visible outline (two
/// edges meeting at a corner) closes no region: what is left of the frame
/// once its background (the biggest edge-free region touching the frame's
/// edge, at least a quarter of it) is taken away, when that is a
/// straight-edged block running into the frame's edge.
fn beyond_background(edges: &GrayImage, scale: f64) -> Option<Quad> {
    use imageproc::region_labelling::{connected_components, Connectivity};
    let (w, h) = edges.dimensions();
    let frame = f64::from(w) * f64::from(h);
    let regions = connected_components(edges, Connectivity::Four, image::Luma([255u8]));
    let mut sizes: std::collections::HashMap<u32, usize> = std::collections::HashMap::new();
    for (x, y, label) in regions.enumerate_pixels() {
        let on_edge = x == 0 || y == 0 || x + 1 == w || y + 1 == h;
        if on_edge && label.0[0] > 0 {
            sizes.entry(label.0[0]).or_default();
        }
    }
    for label in regions.pixels().map(|p| p.0[0]) {
        if let Some(size) = sizes.get_mut(&label) {
            *size += 1;
        }
    }
    let (&background, &size) = sizes
        .iter()
        .max_by_key(|(label, size)| (**size, std::cmp::Reverse(**label)))?;
    if (size as f64) < 0.25 * frame {
        return None;
    }
    let rest = GrayImage::from_fn(w, h, |x, y| {
        image::Luma([if regions.get_pixel(x, y).0[0] == background {
            0
        } else {
            255
        }])
    });
    let blobs = connected_components(&rest, Connectivity::Eight, image::Luma([0u8]));
    let mut counts: std::collections::HashMap<u32, usize> = std::collections::HashMap::new();
    for label in blobs.pixels().map(|p| p.0[0]).filter(|&l| l > 0) {
        *counts.entry(label).or_default() += 1;
    }
    let (&biggest, _) = counts
        .iter()
        .max_by_key(|(label, size)| (**size, std::cmp::Reverse(**label)))?;
    let points: Vec<Point<i32>> = blobs
        .enumerate_pixels()
        .filter(|(_, _, l)| l.0[0] == biggest)
        .map(|(x, y, _)| Point::new(x as i32, y as i32))
        .collect();
    let (quad, touches) = outline(&points, w, h, scale, Framing::Background)?;
    (touches && quad.rectangularity >= MIN_RECTANGULARITY && quad.frame_share >= MIN_DOCUMENT_SHARE)
        .then_some(quad)
}

/// The document on a background, else what runs out of the frame.
fn on_background(document: Option<Quad>, cut: Option<Quad>) -> Found {
    match (document, cut) {
        // Part of a card (its photo, a text block) inside the cut-off card;
        // not an outline too big for a part, of a document's very
        // proportions: that is the document, lying on something
        // straight-edged the frame cuts (a card on a keyboard, a third of
        // the frame: tests/tests/e2e/identity_real.rs).
        (Some(d), Some(c))
            if c.frame_share >= 2.0 * d.frame_share
                && c.contains(d.centre())
                && !(d.frame_share >= PART_SHARE && d.format().1 <= FORMAT_TOLERANCE) =>
        {
            Found::CutOff(c)
        }
        (Some(d), _) => Found::Document(d),
        (None, Some(c)) if c.frame_share >= MIN_DOCUMENT_SHARE => Found::CutOff(c),
        _ => Found::Nothing,
    }
}

/// A document on plain white paper (a scan): `None` when the frame's border
/// is not plain paper or what is on it has no document's shape.
fn on_page(small: &RgbImage, edges: &GrayImage, scale: f64) -> Option<Found> {
    let (w, h) = small.dimensions();
    let band = (w.min(h) / 50).max(2);
    let in_band = |x: u32, y: u32| x < band || y < band || x + band >= w || y + band >= h;
    let border: Vec<[u8; 3]> = small
        .enumerate_pixels()
        .filter(|(x, y, _)| in_band(*x, *y))
        .map(|(_, _, p)| p.0)
        .collect();
    let paper = median_colour(&border)?;
    let luminance =
        0.299 * f64::from(paper[0]) + 0.587 * f64::from(paper[1]) + 0.114 * f64::from(paper[2]);
    let chroma =
        paper.iter().max().copied().unwrap_or(0) - paper.iter().min().copied().unwrap_or(0);
    let differs = |p: [u8; 3], tolerance: u8| (0..3).any(|c| p[c].abs_diff(paper[c]) > tolerance);
    let plain = border
        .iter()
        .filter(|p| !differs(**p, PLAIN_TOLERANCE))
        .count();
    if luminance < PAPER_LUMINANCE
        || chroma > PAPER_CHROMA
        || (plain as f64) < PLAIN_SHARE * border.len() as f64
    {
        return None;
    }
    let content = GrayImage::from_fn(w, h, |x, y| {
        let on =
            differs(small.get_pixel(x, y).0, CONTENT_TOLERANCE) || edges.get_pixel(x, y).0[0] > 0;
        image::Luma([if on { 255 } else { 0 }])
    });
    // Printing is joined into one blob by a dilation; the outline is taken
    // from the content pixels themselves, so the dilation does not widen it.
    let joined = imageproc::morphology::dilate(&content, Norm::LInf, 2);
    let labels = imageproc::region_labelling::connected_components(
        &joined,
        imageproc::region_labelling::Connectivity::Eight,
        image::Luma([0u8]),
    );
    let mut sizes: std::collections::HashMap<u32, usize> = std::collections::HashMap::new();
    for label in labels.pixels().map(|p| p.0[0]).filter(|&l| l > 0) {
        *sizes.entry(label).or_default() += 1;
    }
    let Some((&biggest, _)) = sizes
        .iter()
        .max_by_key(|(label, size)| (**size, std::cmp::Reverse(**label)))
    else {
        // A blank page.
        return Some(Found::Nothing);
    };
    let points: Vec<Point<i32>> = labels
        .enumerate_pixels()
        .filter(|(x, y, l)| l.0[0] == biggest && content.get_pixel(*x, *y).0[0] > 0)
        .map(|(x, y, _)| Point::new(x as i32, y as i32))
        .collect();
    let (quad, touches) = outline(&points, w, h, scale, Framing::Page)?;
    if quad.frame_share < MIN_CANDIDATE_SHARE {
        return Some(Found::Nothing);
    }
    if touches {
        return Some(Found::CutOff(quad));
    }
    let shaped = (ASPECT_RANGE.0..=ASPECT_RANGE.1).contains(&quad.aspect)
        && quad.rectangularity >= MIN_RECTANGULARITY;
    shaped.then_some(Found::Document(quad))
}

/// The frame as the document (a crop to it), when it has a document's
/// proportions and printing; the corners' background, if a tilt or a margin
/// left any, cut away.
fn filling(raw_edges: &GrayImage, edges: &GrayImage, scale: f64) -> Option<Quad> {
    let (w, h) = edges.dimensions();
    let frame = f64::from(w) * f64::from(h);
    let printed = raw_edges.pixels().filter(|p| p.0[0] > 0).count() as f64;
    if printed < MIN_PRINTING * frame {
        return None;
    }
    let background = corner_background(edges, (MAX_CORNER_SHARE * frame) as usize);
    if background.iter().any(|&b| b) {
        let points: Vec<Point<i32>> = (0..h)
            .flat_map(|y| (0..w).map(move |x| (x, y)))
            .filter(|&(x, y)| !background[(y * w + x) as usize])
            .map(|(x, y)| Point::new(x as i32, y as i32))
            .collect();
        let (quad, _) = outline(&points, w, h, scale, Framing::Filling)?;
        let (_, deviation) = quad.format();
        if deviation <= FORMAT_TOLERANCE && quad.rectangularity >= MIN_RECTANGULARITY {
            return Some(quad);
        }
    }
    // No corner to cut away, or an outline that does not fit: the frame
    // itself, if its proportions are a format's within a crop's tilt.
    let (long, short) = (f64::from(w.max(h)), f64::from(w.min(h)));
    let aspect = long / short;
    let fits = [ID1_ASPECT, TD3_ASPECT].iter().any(|&r| {
        let (sin, cos) = MAX_CROP_TILT_DEGREES.to_radians().sin_cos();
        let tilted = (r * cos + sin) / (r * sin + cos);
        (tilted * 0.996..=r * 1.03).contains(&aspect)
    });
    let (fw, fh) = (f64::from(w) * scale, f64::from(h) * scale);
    fits.then_some(Quad {
        corners: [(0.0, 0.0), (fw, 0.0), (fw, fh), (0.0, fh)],
        frame_share: 1.0,
        aspect,
        rectangularity: 1.0,
        framing: Framing::Filling,
    })
}

/// The whole `width` x `height` frame as a document filling it, when its
/// proportions are a document's (TD3's nominal 1.42 to ID-1's 1.59, 3% either
/// side): for a frame whose machine-readable zone was read with every check
/// digit holding, where the outline search found nothing (a crop of a
/// passport page with a margin measures 1.48, between the formats, where
/// the search takes no crop lest a 3:2 photo of anything printed pass).
pub fn frame_vouched_by_zone(width: u32, height: u32) -> Option<Quad> {
    let (long, short) = (
        f64::from(width.max(height)),
        f64::from(width.min(height).max(1)),
    );
    let aspect = long / short;
    let range = TD3_ASPECT * (1.0 - FORMAT_TOLERANCE)..=ID1_ASPECT * (1.0 + FORMAT_TOLERANCE);
    let (w, h) = (f64::from(width), f64::from(height));
    range.contains(&aspect).then_some(Quad {
        corners: [(0.0, 0.0), (w, 0.0), (w, h), (0.0, h)],
        frame_share: 1.0,
        aspect,
        rectangularity: 1.0,
        framing: Framing::Filling,
    })
}

/// The page a zone read in the whole frame belongs to, when the page fills
/// the frame's width and the frame holds more than the page: the data page
/// of a passport scanned open, its facing page above it (or a card's back
/// on a taller scan). ICAO puts the zone at the page's foot, its lines
/// `line_mm` long on a page `page_mm` wide and high; the zone's `bounds`
/// (x0, y0, x1, y1) then give the page's width, and its foot near the
/// frame's edge (the bottom, or the top when the page is upside down) where
/// the page ends. `None` when the page would not fill the frame's width
/// within [`PAGE_WIDTH_TOLERANCE`], or the zone is not at the frame's edge.
pub fn page_of_zone(
    width: u32,
    height: u32,
    bounds: (f64, f64, f64, f64),
    upside_down: bool,
    (page_w_mm, page_h_mm, line_mm): (f64, f64, f64),
) -> Option<Quad> {
    let (w, h) = (f64::from(width), f64::from(height));
    let (x0, y0, x1, y1) = bounds;
    let page_w = (x1 - x0) * page_w_mm / line_mm;
    let page_h = w * page_h_mm / page_w_mm;
    if (page_w - w).abs() > PAGE_WIDTH_TOLERANCE * w || page_h >= h * (1.0 - FORMAT_TOLERANCE) {
        return None;
    }
    // The zone's outer line ends a few mm from the page's foot.
    let foot_gap = if upside_down { y0 } else { h - y1 };
    if !(0.0..=ZONE_FOOT * page_h).contains(&foot_gap) {
        return None;
    }
    let (top, bottom) = if upside_down {
        (0.0, page_h)
    } else {
        (h - page_h, h)
    };
    Some(Quad {
        corners: [(0.0, top), (w, top), (w, bottom), (0.0, bottom)],
        frame_share: page_h / h,
        aspect: page_w_mm / page_h_mm,
        rectangularity: 1.0,
        framing: Framing::Filling,
    })
}

/// How far from the frame's width the page a zone implies may be.
const PAGE_WIDTH_TOLERANCE: f64 = 0.08;
/// The gap between a zone's outer line and the page's foot, at most, as a
/// share of the page's height (ICAO: about 5 mm of 88 on a passport page;
/// a scan's margin adds some).
const ZONE_FOOT: f64 = 0.15;

/// True for the pixels reached from the frame's four corners without
/// crossing an edge, by floods of at most `limit` pixels each (a flood that
/// grows beyond is the document's own surface, and is not kept).
fn corner_background(edges: &GrayImage, limit: usize) -> Vec<bool> {
    let (w, h) = edges.dimensions();
    let mut background = vec![false; (w * h) as usize];
    for (cx, cy) in [(0, 0), (w - 1, 0), (w - 1, h - 1), (0, h - 1)] {
        if background[(cy * w + cx) as usize] {
            continue;
        }
        let mut seen = vec![false; (w * h) as usize];
        let mut flooded = Vec::new();
        let mut stack = vec![(cx, cy)];
        while let Some((x, y)) = stack.pop() {
            let i = (y * w + x) as usize;
            if seen[i] || edges.get_pixel(x, y).0[0] != 0 {
                continue;
            }
            seen[i] = true;
            flooded.push(i);
            if flooded.len() > limit {
                break;
            }
            if x > 0 {
                stack.push((x - 1, y));
            }
            if x + 1 < w {
                stack.push((x + 1, y));
            }
            if y > 0 {
                stack.push((x, y - 1));
            }
            if y + 1 < h {
                stack.push((x, y + 1));
            }
        }
        if flooded.len() <= limit {
            for i in flooded {
                background[i] = true;
            }
        }
    }
    background
}

/// The minimum-area rectangle of `points` (in a `w` x `h` working copy) as
/// a quad in the upload's coordinates, with whether it touches the frame's edge.
fn outline(
    points: &[Point<i32>],
    w: u32,
    h: u32,
    scale: f64,
    framing: Framing,
) -> Option<(Quad, bool)> {
    if points.len() < 8 {
        return None;
    }
    let hull = convex_hull(points.to_vec());
    let hull_area = polygon_area(&hull);
    let rect = min_area_rect(&hull);
    let rect_area = polygon_area(&rect);
    let (side_a, side_b) = (distance(rect[0], rect[1]), distance(rect[1], rect[2]));
    let (wf, hf) = (f64::from(w), f64::from(h));
    let (mx, my) = (wf * EDGE_MARGIN, hf * EDGE_MARGIN);
    let touches = rect.iter().any(|p| {
        let (x, y) = (f64::from(p.x), f64::from(p.y));
        x <= mx || y <= my || x >= wf - 1.0 - mx || y >= hf - 1.0 - my
    });
    let quad = Quad {
        corners: rect.map(|p| (f64::from(p.x) * scale, f64::from(p.y) * scale)),
        frame_share: (rect_area / (wf * hf)).min(1.0),
        aspect: side_a.max(side_b) / side_a.min(side_b).max(1.0),
        rectangularity: hull_area / rect_area.max(1.0),
        framing,
    };
    Some((quad, touches))
}

/// Each channel's median.
fn median_colour(pixels: &[[u8; 3]]) -> Option<[u8; 3]> {
    if pixels.is_empty() {
        return None;
    }
    let mut out = [0u8; 3];
    for (c, slot) in out.iter_mut().enumerate() {
        let mut histogram = [0usize; 256];
        for p in pixels {
            histogram[usize::from(p[c])] += 1;
        }
        let half = pixels.len() / 2;
        let mut seen = 0;
        for (value, count) in histogram.iter().enumerate() {
            seen += count;
            if seen > half {
                *slot = value as u8;
                break;
            }
        }
    }
    Some(out)
}

/// Straight-edged convex outlines in `mask` big enough to matter, each with
/// whether it touches the frame's edge, in the upload's coordinates.
fn candidates(mask: &GrayImage, scale: f64) -> impl Iterator<Item = (Quad, bool)> {
    let (w, h) = (f64::from(mask.width()), f64::from(mask.height()));
    let frame = w * h;
    find_contours::<i32>(mask)
        .into_iter()
        .filter_map(move |contour| {
            if contour.points.len() < 8 {
                return None;
            }
            let hull = convex_hull(contour.points);
            let hull_area = polygon_area(&hull);
            if hull_area < frame * MIN_CANDIDATE_SHARE {
                return None;
            }
            let rect = min_area_rect(&hull);
            let rect_area = polygon_area(&rect);
            let rectangularity = hull_area / rect_area.max(1.0);
            if rectangularity < MIN_RECTANGULARITY {
                return None;
            }
            let (side_a, side_b) = (distance(rect[0], rect[1]), distance(rect[1], rect[2]));
            let (mx, my) = (w * EDGE_MARGIN, h * EDGE_MARGIN);
            let touches = rect.iter().any(|p| {
                let (x, y) = (f64::from(p.x), f64::from(p.y));
                x <= mx || y <= my || x >= w - 1.0 - mx || y >= h - 1.0 - my
            });
            let quad = Quad {
                corners: rect.map(|p| (f64::from(p.x) * scale, f64::from(p.y) * scale)),
                frame_share: (rect_area / frame).min(1.0),
                aspect: side_a.max(side_b) / side_a.min(side_b).max(1.0),
                rectangularity,
                framing: Framing::Background,
            };
            Some((quad, touches))
        })
}

/// White where a pixel cannot be reached from the frame's edge without
/// crossing an edge pixel (the edges included): filled closed outlines.
fn enclosed_regions(edges: &GrayImage) -> GrayImage {
    let (w, h) = edges.dimensions();
    let mut outside = vec![false; (w * h) as usize];
    let mut stack: Vec<(u32, u32)> = Vec::new();
    for x in 0..w {
        stack.push((x, 0));
        stack.push((x, h - 1));
    }
    for y in 0..h {
        stack.push((0, y));
        stack.push((w - 1, y));
    }
    while let Some((x, y)) = stack.pop() {
        let i = (y * w + x) as usize;
        if outside[i] || edges.get_pixel(x, y).0[0] != 0 {
            continue;
        }
        outside[i] = true;
        if x > 0 {
            stack.push((x - 1, y));
        }
        if x + 1 < w {
            stack.push((x + 1, y));
        }
        if y > 0 {
            stack.push((x, y - 1));
        }
        if y + 1 < h {
            stack.push((x, y + 1));
        }
    }
    GrayImage::from_fn(w, h, |x, y| {
        image::Luma([if outside[(y * w + x) as usize] {
            0
        } else {
            255
        }])
    })
}

/// Canny edges of each colour channel, joined: a blue card on a brown desk
/// can have the desk's luminance, never its colour.
pub fn colour_edges(rgb: &RgbImage) -> GrayImage {
    let mut joined = GrayImage::new(rgb.width(), rgb.height());
    for channel in 0..3 {
        let plane = GrayImage::from_fn(rgb.width(), rgb.height(), |x, y| {
            image::Luma([rgb.get_pixel(x, y).0[channel]])
        });
        // Shrinking to WORK_WIDTH by averaging has smoothed away most of the
        // texture of a desk or a carpet; Canny smooths a little more.
        let edges = imageproc::edges::canny(&plane, 15.0, 45.0);
        for (j, e) in joined.pixels_mut().zip(edges.pixels()) {
            j.0[0] |= e.0[0];
        }
    }
    joined
}

fn polygon_area(points: &[Point<i32>]) -> f64 {
    let n = points.len();
    if n < 3 {
        return 0.0;
    }
    let twice: i64 = (0..n)
        .map(|i| {
            let (a, b) = (points[i], points[(i + 1) % n]);
            i64::from(a.x) * i64::from(b.y) - i64::from(b.x) * i64::from(a.y)
        })
        .sum();
    twice.unsigned_abs() as f64 / 2.0
}

fn distance(a: Point<i32>, b: Point<i32>) -> f64 {
    (f64::from(a.x - b.x)).hypot(f64::from(a.y - b.y))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zone_at_the_foot_of_a_scan_gives_the_page_that_fills_its_width() {
        let td3 = (125.0, 88.0, 44.0 * 2.54);
        // A passport scanned open, 620 x 724: the zone's lines 542 px long,
        // 44 px from the foot; the data page is the lower 436 px.
        let page =
            page_of_zone(620, 724, (37.5, 635.5, 579.5, 680.5), false, td3).expect("the data page");
        assert_eq!(page.framing, Framing::Filling);
        assert!((page.corners[0].1 - (724.0 - 620.0 * 88.0 / 125.0)).abs() < 1e-9);
        assert_eq!(page.corners[2], (620.0, 724.0));
        assert_eq!(page.format().0, "TD3");
        // Upside down, the page is at the top.
        let turned = page_of_zone(620, 724, (40.5, 43.5, 582.5, 88.5), true, td3).expect("turned");
        assert_eq!(turned.corners[0], (0.0, 0.0));
        // A zone half the frame wide (a page on a table), one far from the
        // foot, a frame no taller than the page: no page from the zone.
        assert!(page_of_zone(1240, 724, (37.5, 635.5, 579.5, 680.5), false, td3).is_none());
        assert!(page_of_zone(620, 724, (37.5, 435.5, 579.5, 480.5), false, td3).is_none());
        assert!(page_of_zone(620, 440, (37.5, 360.5, 579.5, 405.5), false, td3).is_none());
    }

    #[test]
    fn a_corner_inside_the_frame_is_one_clear_of_its_edges() {
        let quad = |corners| Quad {
            corners,
            frame_share: 0.3,
            aspect: 1.5,
            rectangularity: 1.0,
            framing: Framing::Background,
        };
        // A table's edge across the frame: every corner on the frame's edge.
        let strip = quad([(0.0, 0.0), (673.0, 0.0), (673.0, 204.0), (0.0, 204.0)]);
        assert!(!strip.has_corner_inside(675, 700));
        // A card running out at the left: its right-hand corners are seen.
        let card = quad([
            (-200.0, 300.0),
            (500.0, 300.0),
            (500.0, 740.0),
            (-200.0, 740.0),
        ]);
        assert!(card.has_corner_inside(1600, 1200));
    }

    #[test]
    fn a_zone_vouches_for_a_frame_of_a_documents_proportions_only() {
        // A passport page cropped with a margin (1.48), a card (1.59), either upright.
        for (w, h) in [(500, 338), (856, 540), (540, 856), (1250, 880)] {
            let quad = frame_vouched_by_zone(w, h).expect("a document's proportions");
            assert_eq!(quad.framing, Framing::Filling);
            assert_eq!(quad.corners[2], (f64::from(w), f64::from(h)));
        }
        // A 4:3 photo, a 16:9 one, a square: not a page, whatever was read in them.
        for (w, h) in [(1600, 1200), (1920, 1080), (800, 800)] {
            assert!(frame_vouched_by_zone(w, h).is_none(), "{w}x{h}");
        }
    }
}
