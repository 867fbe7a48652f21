//! Writes the fuzzer's seed inputs (crates/identity/fuzz/seeds/, kept in the
//! repository): issue 60's slivers, small synthetic cards in each format, a
//! passport page with its zone, and a JPEG cut short and sealed.
//!
//! `cargo run --release -p vigil-identity --features synthetic --example fuzz_seeds -- crates/identity/fuzz/seeds`

use image::codecs::png::{CompressionType, FilterType, PngEncoder};
use image::{GrayImage, ImageEncoder, Luma, RgbImage};
use vigil_identity::mrz::render;
use vigil_identity::synthetic::{self as s, Scene};

/// A PNG compressed as tightly as the encoder can: issue 60's 5x12000 was 266 bytes.
fn png_of(pixels: &[u8], width: u32, height: u32, colour: image::ExtendedColorType) -> Vec<u8> {
    let mut out = Vec::new();
    PngEncoder::new_with_quality(&mut out, CompressionType::Best, FilterType::NoFilter)
        .write_image(pixels, width, height, colour)
        .expect("encodes");
    out
}

fn main() {
    let dir = std::path::PathBuf::from(std::env::args().nth(1).expect("a directory"));
    std::fs::create_dir_all(&dir).expect("the directory");
    let mut seeds: Vec<(String, Vec<u8>)> = Vec::new();
    for (w, h) in [(5, 12_000), (12_000, 5), (300, 6000), (100, 12_000), (1, 1)] {
        let grey = GrayImage::from_pixel(w, h, Luma([200]));
        let png = png_of(&grey, w, h, image::ExtendedColorType::L8);
        seeds.push((format!("sliver_{w}x{h}.png"), png));
    }
    let scene = Scene {
        width: 320,
        height: 240,
        ..Scene::default()
    };
    let card = s::card_in(5, scene);
    let jpeg = s::jpeg(&card, 60, Some(s::camera_exif()));
    seeds.push(("card.jpg".into(), jpeg.clone()));
    seeds.push((
        "card_sealed.jpg".into(),
        [&jpeg[..jpeg.len() / 2], &[0xFF, 0xD9]].concat(),
    ));
    let small: RgbImage = s::resized(&card, 160);
    let png = png_of(
        &small,
        small.width(),
        small.height(),
        image::ExtendedColorType::Rgb8,
    );
    seeds.push(("card.png".into(), png));
    seeds.push(("card.webp".into(), s::webp(&small)));
    let font = render::font();
    let page = render::document(&font, render::Kind::Td3, render::TD3_SPECIMEN, 400, 1);
    let mut photo = render::desk(480, 360, 1);
    render::place(&mut photo, &page, (240.0, 180.0), 400.0, -1.0);
    seeds.push(("passport.jpg".into(), s::jpeg(&photo, 60, None)));
    for (name, bytes) in seeds {
        println!("{name}: {} bytes", bytes.len());
        std::fs::write(dir.join(name), bytes).expect("written");
    }
}
