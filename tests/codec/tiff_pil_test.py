"""DecodeTiff beside PIL's Image.open(f).convert("RGB"), pixel for pixel: the
files PIL writes (every mode and compression it can), and files built here
byte by byte for what PIL cannot write (tiles, separate planes, 16-bit RGB,
associated alpha, 2- and 4-bit samples, MinIsWhite, bit-reversed fill order,
subsampled YCbCr, predictor 2), compressed with zlib or PackBits so that PIL
reads them through libtiff too; every pixel layout PIL's TIFF plugin knows
(its OPEN_INFO table) in every arrangement; every Orientation in every decode
path. Where we differ from PIL by design (docs/cli.md lists each case), the
test says what we give instead. Run by ctest with DECODE_TO_RAW set."""

import itertools
import struct
import zlib

from pil_compare import DecodeError, Image, PilTestCase, decode, gradient, main, np, pil_rgb
from PIL import TiffImagePlugin

# TIFF tag numbers and field types (TIFF 6.0, section 2 and appendix A).
SHORT, LONG = 3, 4
IMAGE_WIDTH, IMAGE_LENGTH, BITS_PER_SAMPLE, COMPRESSION = 256, 257, 258, 259
PHOTOMETRIC, FILL_ORDER, STRIP_OFFSETS, ORIENTATION, SAMPLES_PER_PIXEL = 262, 266, 273, 274, 277
ROWS_PER_STRIP, STRIP_BYTE_COUNTS, PLANAR_CONFIG, PREDICTOR = 278, 279, 284, 317
COLOR_MAP, TILE_WIDTH, TILE_LENGTH, TILE_OFFSETS, TILE_BYTE_COUNTS = 320, 322, 323, 324, 325
EXTRA_SAMPLES, SAMPLE_FORMAT, YCBCR_SUBSAMPLING = 338, 339, 530
MINISWHITE, MINISBLACK, RGB, PALETTE, SEPARATED, YCBCR = 0, 1, 2, 3, 5, 6
NONE, DEFLATE, PACKBITS = 1, 8, 32773


def packbits(row):
    """PackBits (TIFF 6.0 section 9): literal runs of up to 128 bytes and
    repeat runs, so both kinds of header are exercised."""
    out, i = bytearray(), 0
    while i < len(row):
        run = 1
        while i + run < len(row) and run < 128 and row[i + run] == row[i]:
            run += 1
        if run >= 3:
            out += bytes([257 - run, row[i]])
            i += run
            continue
        j = i
        while j < len(row) and j - i < 128 and not (
                j + 2 < len(row) and row[j] == row[j + 1] == row[j + 2]):
            j += 1
        out += bytes([j - i - 1]) + bytes(row[i:j])
        i = j
    return bytes(out)


def pack_rows(samples, bits, endian):
    """rows x cols x spc samples to packed rows (each starting on a byte)."""
    rows = samples.shape[0]
    flat = samples.reshape(rows, -1)
    if bits in (16, 32):
        return [r.astype(f"{endian}u{bits // 8}").tobytes() for r in flat]
    if bits == 8:
        return [r.astype(np.uint8).tobytes() for r in flat]
    shifts = np.arange(bits - 1, -1, -1)
    out = []
    for r in flat:
        bitrow = ((r[:, None].astype(np.uint16) >> shifts) & 1).astype(np.uint8).reshape(-1)
        out.append(np.packbits(bitrow).tobytes())
    return out


def encode_chunk(samples, bits, compression, predictor, endian, fill_order):
    """One strip or tile: predictor 2 (horizontal differences per sample),
    packed rows, compressed, then bit-reversed for FillOrder 2."""
    if predictor == 2:
        dtype = np.uint16 if bits == 16 else np.uint8
        s = samples.astype(dtype)
        d = s.copy()
        d[:, 1:] = s[:, 1:] - s[:, :-1]
        samples = d
    rows = pack_rows(samples, bits, endian)
    if compression == DEFLATE:
        data = zlib.compress(b"".join(rows))
    elif compression == PACKBITS:
        data = b"".join(packbits(r) for r in rows)
    else:
        data = b"".join(rows)
    if fill_order == 2:
        # FillOrder applies to the bytes as stored, compressed or not.
        rev = np.array([int(f"{b:08b}"[::-1], 2) for b in range(256)], np.uint8)
        data = rev[np.frombuffer(data, np.uint8)].tobytes()
    return data


def chunks(samples, planar, rows_per_strip, tile):
    """The image (h x w x s) cut into strips or tiles, plane by plane when
    separate; tiles padded with zeros to the whole tile."""
    h, w, s = samples.shape
    planes = [samples[:, :, i:i + 1] for i in range(s)] if planar == 2 else [samples]
    for p in planes:
        if tile:
            tw, th = tile
            for y in range(0, h, th):
                for x in range(0, w, tw):
                    t = np.zeros((th, tw, p.shape[2]), p.dtype)
                    part = p[y:y + th, x:x + tw]
                    t[:part.shape[0], :part.shape[1]] = part
                    yield t
        else:
            for y in range(0, h, rows_per_strip):
                yield p[y:y + rows_per_strip]


def build_tiff(samples, bits, photometric, *, extra=(), planar=1, rows_per_strip=7,
               tile=None, compression=NONE, predictor=1, colormap=None, endian="<",
               fill_order=1, sample_format=None, encoded_chunks=None, more=()):
    """A one-directory TIFF holding `samples` (h x w x s, values < 2**bits):
    header, chunks, then the IFD and its out-of-line values."""
    h, w, s = samples.shape
    datas = encoded_chunks or [encode_chunk(c, bits, compression, predictor, endian, fill_order)
                               for c in chunks(samples, planar, rows_per_strip, tile)]
    offsets, pos = [], 8
    for d in datas:
        offsets.append(pos)
        pos += len(d)
    entries = [(IMAGE_WIDTH, LONG, [w]), (IMAGE_LENGTH, LONG, [h]),
               (BITS_PER_SAMPLE, SHORT, [bits] * s), (COMPRESSION, SHORT, [compression]),
               (PHOTOMETRIC, SHORT, [photometric]), (SAMPLES_PER_PIXEL, SHORT, [s]),
               (PLANAR_CONFIG, SHORT, [planar])]
    if tile:
        entries += [(TILE_WIDTH, LONG, [tile[0]]), (TILE_LENGTH, LONG, [tile[1]]),
                    (TILE_OFFSETS, LONG, offsets), (TILE_BYTE_COUNTS, LONG, [len(d) for d in datas])]
    else:
        entries += [(STRIP_OFFSETS, LONG, offsets), (ROWS_PER_STRIP, LONG, [rows_per_strip]),
                    (STRIP_BYTE_COUNTS, LONG, [len(d) for d in datas])]
    if extra:
        entries.append((EXTRA_SAMPLES, SHORT, list(extra)))
    if predictor != 1:
        entries.append((PREDICTOR, SHORT, [predictor]))
    if fill_order != 1:
        entries.append((FILL_ORDER, SHORT, [fill_order]))
    if colormap is not None:
        entries.append((COLOR_MAP, SHORT, list(colormap.T.reshape(-1))))
    if sample_format is not None:
        entries.append((SAMPLE_FORMAT, SHORT, [sample_format] * s))
    entries += list(more)
    entries.sort()
    ifd_pos = pos + (pos & 1)
    values_pos = ifd_pos + 2 + 12 * len(entries) + 4
    ifd, values = struct.pack(endian + "H", len(entries)), b""
    for tag, kind, vals in entries:
        packed = struct.pack(endian + ("H" if kind == SHORT else "I") * len(vals), *vals)
        if len(packed) <= 4:
            ifd += struct.pack(endian + "HHI", tag, kind, len(vals)) + packed.ljust(4, b"\0")
        else:
            ifd += struct.pack(endian + "HHII", tag, kind, len(vals), values_pos + len(values))
            values += packed + b"\0" * (len(packed) & 1)
    ifd += b"\0\0\0\0"
    head = (b"II*\0" if endian == "<" else b"MM\0*") + struct.pack(endian + "I", ifd_pos)
    return head + b"".join(datas) + b"\0" * (ifd_pos - pos) + ifd + values


class PilWrittenTest(PilTestCase):
    """Files PIL writes: every mode it saves as TIFF, every compression."""

    COMPRESSIONS = [None, "tiff_lzw", "tiff_deflate", "packbits", "jpeg"]

    def save(self, im, name, **kw):
        p = self.path(name)
        im.save(p, **kw)
        return p

    def test_each_mode_and_compression(self):
        rgb = Image.fromarray(gradient(37, 53, 3))
        for mode in ["RGB", "RGBA", "L", "LA", "1", "P", "PA", "CMYK", "YCbCr"]:
            im = rgb.convert(mode) if mode != "YCbCr" else Image.fromarray(gradient(37, 53, 3), "YCbCr")
            for compression in self.COMPRESSIONS:
                # PIL's own writer cannot write what libtiff refuses (JPEG
                # palette and bilevel) and cannot read back its raw YCbCr.
                if compression == "jpeg" and mode in ("1", "P", "PA"):
                    continue
                if compression is None and mode == "YCbCr":
                    continue
                with self.subTest(mode=mode, compression=compression):
                    self.assertSameAsPil(self.save(im, f"{mode}-{compression}.tif",
                                                   compression=compression))

    def test_group4_bilevel(self):
        im = Image.fromarray(gradient(40, 61, 1)[:, :, 0] > 128)
        self.assertSameAsPil(self.save(im, "g4.tif", compression="group4"))

    def test_predictor_2(self):
        im = Image.fromarray(gradient(30, 41, 3))
        for compression in ["tiff_lzw", "tiff_deflate"]:
            with self.subTest(compression=compression):
                p = self.save(im, f"pred-{compression}.tif", compression=compression,
                              tiffinfo={PREDICTOR: 2})
                with Image.open(p) as check:
                    self.assertEqual(check.tag_v2[PREDICTOR], 2)
                self.assertSameAsPil(p)

    def test_many_strips(self):
        im = Image.fromarray(gradient(300, 257, 3))
        self.assertSameAsPil(self.save(im, "strips.tif", compression="tiff_lzw", strip_size=4096))

    def test_gray_16_keeps_the_high_byte(self):
        # PIL opens it as "I;16" and convert("RGB") clips at 255; we keep
        # the high byte (codec/decode.h), so compare with the array >> 8.
        values = (gradient(33, 45, 1)[:, :, 0].astype(np.uint16) * 257) ^ 0x5A
        for compression in [None, "tiff_lzw", "tiff_deflate", "packbits"]:
            with self.subTest(compression=compression):
                p = self.save(Image.fromarray(values), f"g16-{compression}.tif",
                              compression=compression)
                with Image.open(p) as im:
                    self.assertEqual(im.mode, "I;16")
                    high = (np.asarray(im) >> 8).astype(np.uint8)
                self.assertSameAsPil(p, np.repeat(high[:, :, None], 3, axis=2))
                self.assertTrue(np.array_equal(decode(p, keep_gray=True)[:, :, 0], high))

    def test_keep_gray(self):
        gray = Image.fromarray(gradient(20, 31, 1)[:, :, 0])
        for mode in ["L", "LA", "1"]:
            with self.subTest(mode=mode):
                p = self.save(gray.convert(mode), f"kg-{mode}.tif", compression="tiff_lzw")
                ours = decode(p, keep_gray=True)
                self.assertEqual(ours.shape, (20, 31, 1))
                with Image.open(p) as im:
                    want = np.asarray(im.convert("L"))
                self.assertTrue(np.array_equal(ours[:, :, 0], want))
        p = self.save(Image.fromarray(gradient(20, 31, 3)).convert("P"), "kg-P.tif")
        self.assertEqual(decode(p, keep_gray=True).shape, (20, 31, 3))  # palette stays RGB

    def test_first_page_of_several(self):
        first = Image.fromarray(gradient(20, 30, 3, seed=1))
        second = Image.fromarray(gradient(50, 10, 3, seed=2))
        p = self.path("pages.tif")
        first.save(p, save_all=True, append_images=[second], compression="tiff_deflate")
        with Image.open(p) as im:
            self.assertEqual(im.n_frames, 2)
        self.assertSameAsPil(p)

    def test_too_large_is_refused(self):
        p = self.save(Image.fromarray(gradient(40, 50, 3)), "big.tif")
        self.assertSameAsPil(p)
        with self.assertRaises(DecodeError) as cm:
            decode(p, max_pixels=1999)
        self.assertIn("image too large: 50x40 TIFF", cm.exception.message)


class HandBuiltTest(PilTestCase):
    """Files PIL cannot write, built here, read by PIL and by us."""

    def check(self, name, samples, bits, photometric, **kw):
        p = self.write(name, build_tiff(samples, bits, photometric, **kw))
        self.assertSameAsPil(p)
        return p

    def test_tiles(self):
        rgb = gradient(45, 70, 3)
        for compression in [NONE, DEFLATE, PACKBITS]:
            for planar in [1, 2]:
                with self.subTest(compression=compression, planar=planar):
                    self.check(f"tiles-{compression}-{planar}.tif", rgb, 8, RGB, tile=(32, 16),
                               compression=compression, planar=planar)
        self.check("tiles-gray.tif", gradient(45, 70, 1), 8, MINISBLACK, tile=(16, 48),
                   compression=DEFLATE)

    def test_separate_planes(self):
        for compression in [NONE, DEFLATE, PACKBITS]:
            with self.subTest(compression=compression):
                self.check(f"planar-rgb-{compression}.tif", gradient(29, 31, 3), 8, RGB, planar=2,
                           compression=compression)
                self.check(f"planar-rgba-{compression}.tif", gradient(29, 31, 4), 8, RGB,
                           planar=2, extra=(2,), compression=compression)
                self.check(f"planar-cmyk-{compression}.tif", gradient(29, 31, 4), 8, SEPARATED,
                           planar=2, compression=compression)

    def test_rgb_16(self):
        values = gradient(23, 37, 6).view(np.uint16).reshape(23, 37, 3)
        for endian in "<>":
            for compression in [NONE, DEFLATE]:
                for predictor in [1, 2]:
                    if compression == NONE and predictor == 2:
                        continue
                    with self.subTest(endian=endian, compression=compression, predictor=predictor):
                        self.check(f"rgb16-{endian == '<'}-{compression}-{predictor}.tif", values,
                                   16, RGB, endian=endian, compression=compression,
                                   predictor=predictor)
        self.check("rgb16-tiles.tif", values, 16, RGB, tile=(16, 16), compression=DEFLATE,
                   predictor=2, planar=2)

    def test_gray_16_big_endian(self):
        values = gradient(23, 37, 2).view(np.uint16).reshape(23, 37, 1)
        p = self.write("g16be.tif", build_tiff(values, 16, MINISBLACK, endian=">",
                                               compression=DEFLATE))
        with Image.open(p) as im:
            high = (np.asarray(im).astype(np.uint16) >> 8).astype(np.uint8)
        self.assertSameAsPil(p, np.repeat(high[:, :, None], 3, axis=2))

    def test_associated_alpha_is_unpremultiplied_as_pil_does(self):
        # PIL's "RGBa" unpacking: c * 255 // a clipped, black where a = 0;
        # libtiff's RGBA reader would not give these pixels.
        rgba = gradient(25, 40, 4)
        rgba[0, :, 3] = 0
        rgba[1, :, 3] = 255
        for compression, planar in [(NONE, 1), (DEFLATE, 1), (DEFLATE, 2)]:
            # (PIL's own raw reader has no "a" band for separate planes.)
            with self.subTest(compression=compression, planar=planar):
                p = self.check(f"assoc-{compression}-{planar}.tif", rgba, 8, RGB, extra=(1,),
                               compression=compression, planar=planar)
        ours = decode(p).astype(np.int32)
        self.assertTrue((ours[0] == 0).all())
        self.assertTrue(np.array_equal(ours[1], rgba[1, :, :3]))
        a = rgba[2:, :, 3:].astype(np.int32)
        color = rgba[2:, :, :3].astype(np.int32)
        want = np.where(a == 0, 0, np.minimum(255, color * 255 // np.maximum(a, 1)))
        self.assertTrue(np.array_equal(ours[2:], want))

    def test_unassociated_alpha_is_dropped(self):
        rgba = gradient(25, 40, 4)
        p = self.check("unassoc.tif", rgba, 8, RGB, extra=(2,), compression=DEFLATE)
        self.assertTrue(np.array_equal(decode(p), rgba[:, :, :3]))
        self.check("rgbx.tif", rgba, 8, RGB, extra=(0,), compression=PACKBITS)

    def test_small_gray_and_bilevel(self):
        for bits in [1, 2, 4]:
            values = gradient(19, 43, 1) % (1 << bits)
            for photometric in [MINISBLACK, MINISWHITE]:
                for compression in [NONE, DEFLATE]:
                    with self.subTest(bits=bits, photometric=photometric, compression=compression):
                        self.check(f"g{bits}-{photometric}-{compression}.tif", values, bits,
                                   photometric, compression=compression)
        self.check("g8-white.tif", gradient(19, 43, 1), 8, MINISWHITE, compression=DEFLATE)

    def test_bit_reversed_fill_order(self):
        values = gradient(19, 43, 1) % 2
        for compression in [NONE, PACKBITS]:
            with self.subTest(compression=compression):
                self.check(f"fill2-{compression}.tif", values, 1, MINISBLACK, fill_order=2,
                           compression=compression)

    def test_palettes(self):
        colormap = (gradient(256, 3, 1, seed=5).reshape(256, 3).astype(np.uint16) * 257) ^ 0x33
        for bits in [1, 2, 4, 8]:
            values = gradient(21, 33, 1) % (1 << bits)
            with self.subTest(bits=bits):
                self.check(f"pal{bits}.tif", values, bits, PALETTE,
                           colormap=colormap[:1 << bits], compression=DEFLATE)

    def test_cmyk(self):
        cmyk = gradient(21, 33, 4)
        for compression in [NONE, DEFLATE]:
            with self.subTest(compression=compression):
                self.check(f"cmyk-{compression}.tif", cmyk, 8, SEPARATED, compression=compression,
                           predictor=2 if compression == DEFLATE else 1)

    def test_predictor_2(self):
        for planar in [1, 2]:
            with self.subTest(planar=planar):
                self.check(f"pred-{planar}.tif", gradient(30, 50, 3), 8, RGB, compression=DEFLATE,
                           predictor=2, planar=planar, tile=(16, 16))
                self.check(f"pred-gray-{planar}.tif", gradient(30, 50, 1), 8, MINISBLACK,
                           compression=DEFLATE, predictor=2)

    def test_subsampled_ycbcr(self):
        # 2x2 subsampling: each data unit holds four Y, then Cb and Cr;
        # libtiff's RGBA reader converts it, for PIL and for us.
        h, w = 16, 24
        rng = np.random.default_rng(3)
        units = rng.integers(16, 240, size=(h // 2, w // 2, 6), dtype=np.uint8)
        data = zlib.compress(units.tobytes())
        p = self.write("ycbcr.tif", build_tiff(
            np.zeros((h, w, 3), np.uint8), 8, YCBCR, rows_per_strip=h, compression=DEFLATE,
            encoded_chunks=[data], more=[(YCBCR_SUBSAMPLING, SHORT, [2, 2])]))
        self.assertSameAsPil(p)

    def test_unsupported_kinds_are_refused(self):
        floats = gradient(8, 8, 4).view(np.uint32).reshape(8, 8, 1)
        cases = {
            "float.tif": (floats, 32, MINISBLACK, {"sample_format": 3}, "floating-point"),
            "int32.tif": (floats, 32, MINISBLACK, {}, "32-bit grayscale"),
            "signed.tif": (gradient(8, 8, 1), 8, MINISBLACK, {"sample_format": 2}, "signed"),
            "lab.tif": (gradient(8, 8, 3), 8, 8, {}, "photometric interpretation 8"),
            "rgb4.tif": (gradient(8, 8, 3) % 16, 4, RGB, {}, "4-bit RGB"),
        }
        for name, (samples, bits, photometric, kw, fragment) in cases.items():
            with self.subTest(name=name):
                p = self.write(name, build_tiff(samples, bits, photometric, **kw))
                self.assertRefused(p, "unsupported TIFF", fragment)


class DamagedTest(PilTestCase):
    def test_cut_and_flipped_files_are_refused_or_decoded_never_killed(self):
        p = self.write("ok.tif", build_tiff(gradient(20, 30, 3), 8, RGB, compression=DEFLATE,
                                            tile=(16, 16)))
        data = open(p, "rb").read()
        for cut in range(0, len(data), 97):
            with self.subTest(cut=cut):
                self.assertRefused(self.write(f"cut{cut}.tif", data[:cut]))
        rng = np.random.default_rng(7)
        for i in range(40):
            bad = bytearray(data)
            for at in rng.integers(0, len(data), size=3):
                bad[at] ^= 0xFF
            q = self.write(f"flip{i}.tif", bytes(bad))
            try:
                decode(q)
            except DecodeError as e:
                self.assertEqual(e.returncode, 1, e.message)
                self.assertIn(q, e.message)


# PIL's transposes for Orientation 2..8 (TiffImagePlugin.load_end).
TRANSPOSES = {2: Image.Transpose.FLIP_LEFT_RIGHT, 3: Image.Transpose.ROTATE_180,
              4: Image.Transpose.FLIP_TOP_BOTTOM, 5: Image.Transpose.TRANSPOSE,
              6: Image.Transpose.ROTATE_270, 7: Image.Transpose.TRANSVERSE,
              8: Image.Transpose.ROTATE_90}


def oriented(pixels, orientation):
    """`pixels` (h x w x c) shown as `orientation` says, by PIL."""
    if orientation not in TRANSPOSES:
        return pixels
    flat = pixels[:, :, 0] if pixels.shape[2] == 1 else pixels
    out = np.asarray(Image.fromarray(flat).transpose(TRANSPOSES[orientation]))
    return out[:, :, None] if pixels.shape[2] == 1 else out


class OrientationTest(PilTestCase):
    """The Orientation tag, applied as PIL applies it on load: in every
    decode path (PIL's own reader, libtiff's strips and tiles, JPEG in TIFF,
    libtiff's RGBA reader for YCbCr), to every kind of pixel."""

    def test_pil_written_every_mode_and_compression(self):
        rgb = gradient(21, 34, 3, seed=8)
        for mode in ["RGB", "RGBA", "L", "LA", "1", "P", "CMYK", "YCbCr"]:
            im = Image.fromarray(rgb, "YCbCr" if mode == "YCbCr" else "RGB")
            im = im if mode == "YCbCr" else im.convert(mode)
            for compression in PilWrittenTest.COMPRESSIONS:
                if (compression == "jpeg" and mode in ("1", "P")) or (
                        compression is None and mode == "YCbCr"):
                    continue  # as in PilWrittenTest
                as_stored = None
                for orientation in range(1, 9):
                    with self.subTest(mode=mode, compression=compression, orientation=orientation):
                        p = self.path(f"{mode}-{compression}-{orientation}.tif")
                        info = TiffImagePlugin.ImageFileDirectory_v2()
                        info[ORIENTATION] = orientation
                        im.save(p, compression=compression, tiffinfo=info)
                        if orientation == 1:
                            as_stored = pil_rgb(p)
                        if mode == "YCbCr" and compression != "jpeg":
                            # libtiff's RGBA reader: see test_ycbcr_rgba_reader.
                            self.assertSameAsPil(p, oriented(as_stored, orientation))
                        else:
                            self.assertSameAsPil(p)
                        self.assertEqual(decode(p).shape[:2],
                                         (34, 21) if orientation > 4 else (21, 34))

    def test_every_kind_and_layout(self):
        colormap = (gradient(256, 3, 1, seed=5).reshape(256, 3).astype(np.uint16) * 257) ^ 0x33
        wide = gradient(19, 27, 8, seed=9)
        kinds = {
            "gray1": (gradient(19, 27, 1) % 2, 1, MINISBLACK, {}),
            "white4": (gradient(19, 27, 1) % 16, 4, MINISWHITE, {}),
            "gray8": (gradient(19, 27, 1), 8, MINISBLACK, {}),
            "pal4": (gradient(19, 27, 1) % 16, 4, PALETTE, {"colormap": colormap[:16]}),
            "pal8": (gradient(19, 27, 1), 8, PALETTE, {"colormap": colormap}),
            "rgb8": (gradient(19, 27, 3), 8, RGB, {}),
            "rgb16": (wide[:, :, :6].view(np.uint16).reshape(19, 27, 3), 16, RGB, {}),
            "rgba-assoc": (gradient(19, 27, 4), 8, RGB, {"extra": (1,)}),
            "rgba-unassoc": (gradient(19, 27, 4), 8, RGB, {"extra": (2,)}),
            "cmyk8": (gradient(19, 27, 4), 8, SEPARATED, {}),
            "cmyk16": (wide.view(np.uint16).reshape(19, 27, 4), 16, SEPARATED, {}),
        }
        layouts = [dict(compression=NONE), dict(compression=DEFLATE, rows_per_strip=4),
                   dict(compression=DEFLATE, tile=(16, 16)),
                   dict(compression=PACKBITS, tile=(16, 16), planar=2)]
        for (name, (samples, bits, photometric, kw)), layout in itertools.product(
                kinds.items(), layouts):
            if layout.get("tile") and bits < 8:
                continue
            if layout.get("planar") and (samples.shape[2] == 1 or "assoc" in name):
                continue  # PIL reads no planar associated alpha (docs/cli.md)
            for orientation in range(1, 9):
                with self.subTest(kind=name, layout=layout, orientation=orientation):
                    p = self.write(f"{name}-{orientation}.tif", build_tiff(
                        samples, bits, photometric, more=[(ORIENTATION, SHORT, [orientation])],
                        **kw, **layout))
                    self.assertSameAsPil(p)

    def test_keep_gray(self):
        gray = gradient(19, 27, 1, seed=2)
        for orientation in range(1, 9):
            with self.subTest(orientation=orientation):
                p = self.write(f"g{orientation}.tif", build_tiff(
                    gray, 8, MINISBLACK, compression=DEFLATE, tile=(16, 16),
                    more=[(ORIENTATION, SHORT, [orientation])]))
                self.assertTrue(np.array_equal(decode(p, keep_gray=True),
                                               oriented(gray, orientation)))

    def test_ycbcr_rgba_reader(self):
        # YCbCr that libjpeg does not convert goes through libtiff's RGBA
        # reader, in PIL and here. Pillow before 11.2 let that reader mirror
        # each block of rows it read as the tag says, then transposed the
        # whole image too (Pillow #8556): strips came out scrambled. We apply
        # the tag once, as Pillow 11.2 and later do (docs/cli.md).
        h, w = 24, 32
        rng = np.random.default_rng(3)
        for sub, rows, tile in [((2, 2), 8, None), ((1, 1), 6, None), ((2, 2), 24, None),
                                ((2, 2), None, (16, 16))]:
            sx, sy = sub
            if tile:
                units = [rng.integers(16, 240, size=(16 // sy, 16 // sx, sx * sy + 2),
                                      dtype=np.uint8) for _ in range((h // 16 + 1) * (w // 16))]
                chunk_data = [zlib.compress(u.tobytes()) for u in units]
            else:
                units = rng.integers(16, 240, size=(h // sy, w // sx, sx * sy + 2), dtype=np.uint8)
                chunk_data = [zlib.compress(units[y // sy:(y + rows) // sy].tobytes())
                              for y in range(0, h, rows)]
            layout = dict(tile=tile) if tile else dict(rows_per_strip=rows)
            as_stored = None
            for orientation in range(1, 9):
                with self.subTest(sub=sub, rows=rows, tile=tile, orientation=orientation):
                    p = self.write(f"ycc-{orientation}.tif", build_tiff(
                        np.zeros((h, w, 3), np.uint8), 8, YCBCR, compression=DEFLATE,
                        encoded_chunks=chunk_data, **layout,
                        more=[(YCBCR_SUBSAMPLING, SHORT, [sx, sy]),
                              (ORIENTATION, SHORT, [orientation])]))
                    if orientation == 1:
                        self.assertSameAsPil(p)
                        as_stored = pil_rgb(p)
                    self.assertTrue(np.array_equal(decode(p), oriented(as_stored, orientation)))

    def test_values_outside_1_to_8_are_ignored(self):
        # libtiff reports "Bad value" and keeps 1; PIL shows the rows as
        # stored too. Not damage.
        for orientation in [0, 9, 65535]:
            for compression in [NONE, DEFLATE]:
                with self.subTest(orientation=orientation, compression=compression):
                    p = self.write(f"bad{orientation}-{compression}.tif", build_tiff(
                        gradient(19, 27, 3), 8, RGB, compression=compression,
                        more=[(ORIENTATION, SHORT, [orientation])]))
                    self.assertSameAsPil(p)


def pil_layouts():
    """The pixel layouts PIL's TIFF plugin opens (its OPEN_INFO table) as
    (endian, photometric, fill order, bits, samples, extra samples), those
    of unsigned samples of one depth up to 16 bits, CIELab aside (we refuse
    the rest: HandBuiltTest.test_unsupported_kinds_are_refused)."""
    for prefix, photometric, sample_format, fill_order, bps, extra in TiffImagePlugin.OPEN_INFO:
        if sample_format == (1,) and max(bps) <= 16 and len(set(bps)) == 1 and photometric != 8:
            yield "<" if prefix == TiffImagePlugin.II else ">", photometric, fill_order, bps[0], \
                len(bps), extra


class EveryPilLayoutTest(PilTestCase):
    """Every layout PIL opens, in every arrangement (strips or tiles,
    contiguous or separate planes, uncompressed or deflate). Our pixels do
    not depend on the arrangement: they equal PIL's for the contiguous,
    deflate-compressed strips of the same samples (read by libtiff, as PIL
    reads it). PIL's depend on it only where docs/cli.md says PIL 9.4
    misreads a file, and elsewhere equal ours."""

    def pil_misreads(self, photometric, bits, samples, extra, fill_order, planar, tile,
                     compression):
        if photometric == YCBCR and compression == NONE:
            return True  # PIL's own reader takes the samples for RGBX
        if planar == 2 and compression == NONE:
            # PIL's own reader, plane by plane: 8-bit planes, no bit reversal,
            # a wrong row length in 4-plane tiles cut by the right edge.
            return bits == 16 or fill_order == 2 or (tile is not None and samples >= 4)
        # libtiff calls a 4th RGB sample without ExtraSamples "unspecified",
        # and PIL unpremultiplies planar RGB by such a sample.
        return planar == 2 and photometric == RGB and samples >= 4 and not extra

    def test_every_layout_and_arrangement(self):
        h, w = 19, 27
        for endian, photometric, fill_order, bits, samples, extra in pil_layouts():
            values = gradient(h, w, samples * 2, seed=bits + samples)
            values = values.view(np.uint16).reshape(h, w, -1)[:, :, :samples] if bits == 16 \
                else values[:, :, :samples] % (1 << bits) if bits < 8 else values[:, :, :samples]
            kw = dict(extra=extra, endian=endian, fill_order=fill_order)
            if photometric == PALETTE:
                kw["colormap"] = (gradient(1 << bits, 3, 1, seed=5).reshape(-1, 3)
                                  .astype(np.uint16) * 257) ^ 0x33
            if photometric == YCBCR:
                kw["more"] = [(YCBCR_SUBSAMPLING, SHORT, [1, 1])]
            key = f"{photometric}-{bits}-{samples}-{extra}-{fill_order}-{endian == '<'}"
            reference = self.write(f"{key}.tif", build_tiff(values, bits, photometric,
                                                            compression=DEFLATE, **kw))
            if bits == 12:
                self.assertRefused(reference, "unsupported TIFF", "12-bit grayscale")
                continue
            if bits == 16 and photometric in (MINISWHITE, MINISBLACK):
                high = (values >> 8).astype(np.uint8)
                want = np.repeat(255 - high if photometric == MINISWHITE else high, 3, axis=2)
            else:
                want = pil_rgb(reference)
            for planar, tile, compression in itertools.product([1, 2], [None, (16, 16)],
                                                               [NONE, DEFLATE]):
                if (planar == 2 and samples == 1) or (tile and bits < 8):
                    continue
                with self.subTest(layout=key, planar=planar, tile=tile, compression=compression):
                    p = self.write(f"{key}-{planar}-{tile is None}-{compression}.tif", build_tiff(
                        values, bits, photometric, planar=planar, tile=tile,
                        compression=compression, **kw))
                    self.assertSameAsPil(p, want)
                    if bits == 16 and photometric in (MINISWHITE, MINISBLACK):
                        continue  # PIL clips these (docs/cli.md)
                    try:
                        pil = pil_rgb(p)
                    except Exception:  # pylint: disable=broad-except
                        continue  # a file PIL cannot open: we read it
                    if not np.array_equal(pil, want):
                        self.assertTrue(self.pil_misreads(photometric, bits, samples, extra,
                                                          fill_order, planar, tile, compression),
                                        f"{p}: PIL reads it otherwise, and docs/cli.md "
                                        "does not say why")


if __name__ == "__main__":
    main()
