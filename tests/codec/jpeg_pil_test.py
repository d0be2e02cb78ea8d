"""Both JPEG paths beside PIL's Image.open(f).convert("RGB"), pixel for
pixel: the packer's (Transcoder: TurboJPEG) and the reader's (JpegDecoder:
whole images, crops, and crops of files re-coded with restart markers, which
it cuts out of the file). Files are written by PIL, then their markers are
edited byte by byte into every color-marker combination cameras, scanners
and Photoshop write: CMYK with and without an Adobe APP14 marker and with
each transform code (YCCK is transform 2), three components with JFIF, with
Adobe's transform 0/1/2, with no marker and component ids 1-2-3 or R-G-B;
grayscale; 4:4:4, 4:2:2 and 4:2:0; baseline and progressive; EXIF
orientation. Run by ctest with DECODE_TO_RAW set."""

import io
import struct

from pil_compare import DecodeError, Image, PilTestCase, decode, gradient, main, np, pil_rgb

SOF0, SOF2, SOS, APP0, APP1, APP14 = 0xC0, 0xC2, 0xDA, 0xE0, 0xE1, 0xEE
PATHS = ["packer", "reader"]


def segments(data):
    """(marker, start, end) of each marker segment up to the first SOS."""
    at, out = 2, []
    while True:
        assert data[at] == 0xFF, at
        marker = data[at + 1]
        end = at + 2 + struct.unpack(">H", data[at + 2:at + 4])[0]
        out.append((marker, at, end))
        if marker == SOS:
            return out
        at = end


def drop(data, marker):
    """`data` without its `marker` segments."""
    for m, start, end in reversed(segments(data)):
        if m == marker:
            data = data[:start] + data[end:]
    return data


def adobe(transform, length=12):
    """An APP14 "Adobe" segment (version 100, flags 0) with `transform`;
    libjpeg reads the transform only from a body of at least 12 bytes."""
    body = (b"Adobe" + struct.pack(">HHHB", 100, 0, 0, transform))[:length]
    return b"\xff\xee" + struct.pack(">H", len(body) + 2) + body


def insert(data, segment, after=0):
    """`segment` placed after the first `after` segments (0: right after SOI)."""
    at = segments(data)[after - 1][2] if after else 2
    return data[:at] + segment + data[at:]


def with_component_ids(data, ids):
    """The frame's and the scan's component ids replaced (a sequential,
    single-scan file)."""
    data = bytearray(data)
    for marker, start, _ in segments(bytes(data)):
        if marker in (SOF0, SOF2):
            for i, cid in enumerate(ids):
                data[start + 10 + 3 * i] = cid
        if marker == SOS:
            for i, cid in enumerate(ids):
                data[start + 5 + 2 * i] = cid
    return bytes(data)


def save(im, **kw):
    out = io.BytesIO()
    im.save(out, "JPEG", **kw)
    return out.getvalue()


class JpegPilTestCase(PilTestCase):
    # Crops of each test image (37 x 53 unless said): inside, at each edge,
    # one pixel, MCU-aligned and not.
    REGIONS = [(0, 0, 53, 37), (5, 3, 17, 11), (16, 16, 16, 16), (40, 20, 13, 17), (0, 30, 7, 7),
               (52, 36, 1, 1)]

    def check(self, name, data, regions=True):
        """Every path's pixels equal PIL's: the packer's and the reader's
        whole image, the reader's crops, and both again after the re-code
        with restart markers (the reader then cuts MCUs out)."""
        p = self.write(name, data)
        for path in PATHS:
            for restart_markers in [False, True]:
                with self.subTest(name=name, path=path, restart_markers=restart_markers):
                    self.assertSameAsPil(p, jpeg=path, restart_markers=restart_markers)
        if regions:
            for region in self.REGIONS:
                for restart_markers in [False, True]:
                    with self.subTest(name=name, region=region, restart_markers=restart_markers):
                        self.assertSameAsPil(p, jpeg="reader", region=region,
                                             restart_markers=restart_markers)
        return p


class CmykTest(JpegPilTestCase):
    """4 components: PIL reads every CMYK and YCCK JPEG with Adobe's
    inverted samples ("CMYK;I"), whatever the markers say."""

    def cmyk(self, **kw):
        return save(Image.fromarray(gradient(37, 53, 4, seed=3), "CMYK"), quality=92, **kw)

    def test_pil_writes_adobe_cmyk(self):
        data = self.cmyk()
        self.assertEqual([m for m, _, _ in segments(data)].count(APP14), 1)
        self.check("adobe0.jpg", data)

    def test_cmyk_without_adobe_marker_is_inverted_as_pil_reads_it(self):
        # Regression: without the marker we used the plain-ink convention,
        # every pixel inverted relative to PIL.
        p = self.check("plain.jpg", drop(self.cmyk(), APP14))
        with_marker = pil_rgb(self.write("marked.jpg", self.cmyk()))
        for path in PATHS:
            self.assertTrue(np.array_equal(decode(p, jpeg=path), with_marker))

    def test_every_adobe_transform_code(self):
        # 0: CMYK; 2: YCCK; 1 and 7: not codes for 4 components (libjpeg
        # warns and assumes YCCK; the image is whole, PIL reads it); a body
        # too short to hold the code: no Adobe marker for libjpeg.
        plain = drop(self.cmyk(), APP14)
        for transform, length in [(0, 12), (1, 12), (2, 12), (7, 12), (2, 11)]:
            name = f"adobe{transform}-{length}.jpg"
            self.check(name, insert(plain, adobe(transform, length)), regions=transform == 2)

    def test_marker_anywhere_before_the_frame(self):
        plain = drop(self.cmyk(), APP14)
        self.check("late-adobe.jpg", insert(plain, adobe(2), after=1), regions=False)

    def test_progressive_and_subsampled(self):
        self.check("prog.jpg", drop(self.cmyk(progressive=True), APP14), regions=False)
        self.check("prog-adobe.jpg", self.cmyk(progressive=True), regions=False)
        for subsampling in [0, 1, 2]:
            self.check(f"sub{subsampling}.jpg", drop(self.cmyk(subsampling=subsampling), APP14),
                       regions=False)


class ThreeComponentTest(JpegPilTestCase):
    """3 components: libjpeg tells YCbCr from RGB by JFIF, the Adobe
    transform, then the component ids; both PIL and we leave it to libjpeg."""

    def rgb(self, **kw):
        return save(Image.fromarray(gradient(37, 53, 3, seed=4)), quality=90, **kw)

    def test_every_color_marker(self):
        jfif = self.rgb()
        bare = drop(jfif, APP0)
        cases = {
            "jfif.jpg": jfif,
            "bare.jpg": bare,  # ids 1, 2, 3: YCbCr
            "ids-rgb.jpg": with_component_ids(bare, b"RGB"),  # stored as RGB
            "ids-other.jpg": with_component_ids(bare, bytes([0, 1, 2])),  # YCbCr assumed
            "adobe0.jpg": insert(bare, adobe(0)),  # RGB
            "adobe1.jpg": insert(bare, adobe(1)),  # YCbCr
            "adobe2.jpg": insert(bare, adobe(2)),  # unknown: YCbCr, a warning
            "adobe-short.jpg": insert(bare, adobe(0, 11)),  # not an Adobe marker
            "jfif-adobe0.jpg": insert(jfif, adobe(0), after=1),  # JFIF wins
        }
        for name, data in cases.items():
            self.check(name, data, regions=name in ("adobe0.jpg", "ids-rgb.jpg"))

    def test_samplings_sizes_and_progressive(self):
        for subsampling in [0, 1, 2]:
            for progressive in [False, True]:
                for h, w in [(37, 53), (16, 16), (1, 1), (9, 130)]:
                    im = Image.fromarray(gradient(h, w, 3, seed=h + w))
                    data = save(im, quality=85, subsampling=subsampling, progressive=progressive)
                    self.check(f"s{subsampling}-p{progressive}-{h}x{w}.jpg", data,
                               regions=(h, w) == (37, 53))

    def test_exif_orientation_is_not_applied(self):
        # PIL's convert("RGB") leaves EXIF orientation alone (that is
        # ImageOps.exif_transpose's job), and so do we.
        im = Image.fromarray(gradient(37, 53, 3, seed=5))
        for orientation in range(1, 9):
            exif = Image.Exif()
            exif[0x0112] = orientation
            data = save(im, quality=90, exif=exif.tobytes())
            self.assertIn(APP1, [m for m, _, _ in segments(data)])
            p = self.check(f"exif{orientation}.jpg", data, regions=False)
            self.assertEqual(decode(p).shape, (37, 53, 3))


class GrayTest(JpegPilTestCase):
    def test_gray(self):
        gray = Image.fromarray(gradient(37, 53, 1, seed=6)[:, :, 0])
        self.check("gray.jpg", save(gray, quality=90))
        self.check("gray-bare.jpg", drop(save(gray, quality=90), APP0), regions=False)
        self.check("gray-prog.jpg", save(gray, quality=90, progressive=True), regions=False)
        # An Adobe marker means nothing to one component.
        self.check("gray-adobe.jpg", insert(save(gray), adobe(2)), regions=False)

    def test_keep_gray_is_the_luma_plane(self):
        p = self.write("g.jpg", save(Image.fromarray(gradient(20, 30, 1)[:, :, 0]), quality=90))
        ours = decode(p, keep_gray=True)
        self.assertEqual(ours.shape, (20, 30, 1))
        with Image.open(p) as im:
            self.assertTrue(np.array_equal(ours[:, :, 0], np.asarray(im)))


class DamagedTest(JpegPilTestCase):
    def test_truncated_cmyk_is_refused_by_both_paths(self):
        data = save(Image.fromarray(gradient(64, 64, 4), "CMYK"), quality=90)
        p = self.write("cut.jpg", data[:len(data) // 2])
        for path in PATHS:
            with self.subTest(path=path):
                with self.assertRaises(DecodeError) as cm:
                    decode(p, jpeg=path)
                self.assertEqual(cm.exception.returncode, 1)
                self.assertIn(p, cm.exception.message)


if __name__ == "__main__":
    main()
