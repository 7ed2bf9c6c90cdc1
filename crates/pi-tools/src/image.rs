//! Images for the read tool: recognised by their first bytes (JPEG, PNG, GIF, WebP, as
//! upstream's `file-type` sniffing does; the file name plays no part), and measured from their
//! headers so that oversized ones can be reported without decoding them.

/// How many leading bytes the sniffing looks at.
pub(crate) const SNIFF_BYTES: usize = 4100;

/// The MIME type of a supported image, from the first bytes of a file.
pub(crate) fn sniff_mime(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"GIF") {
        return Some("image/gif");
    }
    if head.starts_with(&[0xFF, 0xD8, 0xFF]) {
        // 0xF7 after the marker is JPEG-LS, which is not a supported image.
        return if head.get(3) == Some(&0xF7) {
            None
        } else {
            Some("image/jpeg")
        };
    }
    if head.starts_with(&[0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A]) {
        return png_kind(head);
    }
    if head.starts_with(b"RIFF") && head.get(8..12) == Some(b"WEBP") {
        return Some("image/webp");
    }
    None
}

/// A PNG is an image unless it is animated (an `acTL` chunk before the first `IDAT`: APNG,
/// which upstream does not treat as an image) or its first chunk is not a proper header.
fn png_kind(head: &[u8]) -> Option<&'static str> {
    let mut pos = 8usize;
    let mut seen_header = false;
    for _ in 0..512 {
        let Some(h) = head.get(pos..pos + 8) else {
            return Some("image/png");
        };
        let len = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
        if len > i32::MAX as u32 {
            return None;
        }
        let kind = &h[4..8];
        if kind == b"IHDR" {
            if len != 13 {
                return None;
            }
            seen_header = true;
        }
        match kind {
            b"IDAT" => return Some("image/png"),
            b"acTL" => return None,
            _ if !seen_header && kind != b"CgBI" => return None,
            _ => {}
        }
        pos = pos.saturating_add(8).saturating_add(len as usize + 4);
    }
    Some("image/png")
}

/// Width and height from the image's header, if it can be read.
pub(crate) fn dimensions(data: &[u8], mime: &str) -> Option<(u32, u32)> {
    match mime {
        "image/png" => {
            let w = be32(data.get(16..20)?);
            let h = be32(data.get(20..24)?);
            Some((w, h))
        }
        "image/gif" => {
            let d = data.get(6..10)?;
            Some((
                u32::from(u16::from_le_bytes([d[0], d[1]])),
                u32::from(u16::from_le_bytes([d[2], d[3]])),
            ))
        }
        "image/jpeg" => jpeg_dimensions(data),
        "image/webp" => webp_dimensions(data),
        _ => None,
    }
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn jpeg_dimensions(data: &[u8]) -> Option<(u32, u32)> {
    let mut pos = 2usize;
    loop {
        // Skip to the next marker (0xFF, possibly repeated as fill bytes).
        while *data.get(pos)? != 0xFF {
            pos += 1;
        }
        while *data.get(pos)? == 0xFF {
            pos += 1;
        }
        let marker = *data.get(pos)?;
        pos += 1;
        match marker {
            0xD8 | 0x01 | 0xD0..=0xD7 => continue,
            0xD9 | 0xDA => return None,
            _ => {}
        }
        let seg = data.get(pos..pos + 2)?;
        let len = usize::from(u16::from_be_bytes([seg[0], seg[1]]));
        if len < 2 {
            return None;
        }
        let is_sof = matches!(marker, 0xC0..=0xCF) && !matches!(marker, 0xC4 | 0xC8 | 0xCC);
        if is_sof {
            let d = data.get(pos + 3..pos + 7)?;
            let h = u32::from(u16::from_be_bytes([d[0], d[1]]));
            let w = u32::from(u16::from_be_bytes([d[2], d[3]]));
            return Some((w, h));
        }
        pos += len;
    }
}

fn webp_dimensions(data: &[u8]) -> Option<(u32, u32)> {
    let chunk = data.get(12..16)?;
    match chunk {
        b"VP8 " => {
            let d = data.get(26..30)?;
            Some((
                u32::from(u16::from_le_bytes([d[0], d[1]]) & 0x3FFF),
                u32::from(u16::from_le_bytes([d[2], d[3]]) & 0x3FFF),
            ))
        }
        b"VP8L" => {
            let d = data.get(21..25)?;
            let bits = u32::from_le_bytes([d[0], d[1], d[2], d[3]]);
            Some(((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1))
        }
        b"VP8X" => {
            let d = data.get(24..30)?;
            let w = u32::from_le_bytes([d[0], d[1], d[2], 0]) + 1;
            let h = u32::from_le_bytes([d[3], d[4], d[5], 0]) + 1;
            Some((w, h))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 1×1 PNG.
    pub(super) const PNG_1X1: &[u8] = &[
        0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44,
        0x52, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F,
        0x15, 0xC4, 0x89, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00,
        0x01, 0x00, 0x00, 0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00, 0x00, 0x00, 0x00, 0x49,
        0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82,
    ];

    #[test]
    fn sniffs_and_measures() {
        assert_eq!(sniff_mime(PNG_1X1), Some("image/png"));
        assert_eq!(dimensions(PNG_1X1, "image/png"), Some((1, 1)));
        assert_eq!(sniff_mime(b"GIF89a\x02\x00\x03\x00"), Some("image/gif"));
        assert_eq!(
            dimensions(b"GIF89a\x02\x00\x03\x00", "image/gif"),
            Some((2, 3))
        );
        assert_eq!(sniff_mime(b"hello"), None);
        assert_eq!(sniff_mime(b""), None);
        assert_eq!(sniff_mime(&[0xFF, 0xD8, 0xFF, 0xF7]), None);
        // An animated PNG: acTL before IDAT.
        let mut apng = PNG_1X1[..33].to_vec();
        apng.extend_from_slice(&[0, 0, 0, 8, b'a', b'c', b'T', b'L', 0, 0, 0, 1, 0, 0, 0, 0]);
        assert_eq!(sniff_mime(&apng), None);
    }

    #[test]
    fn jpeg_size_after_segments() {
        let mut j = vec![0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x04, 0x00, 0x00];
        j.extend_from_slice(&[0xFF, 0xC0, 0x00, 0x11, 0x08, 0x01, 0x2C, 0x02, 0x58]);
        assert_eq!(sniff_mime(&j), Some("image/jpeg"));
        assert_eq!(dimensions(&j, "image/jpeg"), Some((600, 300)));
        assert_eq!(dimensions(&[0xFF, 0xD8, 0xFF], "image/jpeg"), None);
    }
}
