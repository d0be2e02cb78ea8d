"""DecodePng and DecodeWebp beside PIL's Image.open(f).convert("RGB"), pixel
for pixel, on files PIL writes and on files built here with zlib and struct
(16-bit, low-bit gray, short palettes, tRNS, Adam7, hand-put animations),
plus the refusals: cut files, absurd sizes, --max-pixels, bombs.

Where we differ from PIL on purpose, the test says so and checks both sides:
- 16-bit gray: PIL opens it as mode "I" and convert("RGB") clips at 255; we
  keep the high byte (decode.h), compared with np.asarray(img) >> 8.
- A PNG whose bytes end after the image data (IEND cut): PIL decodes it; we
  refuse it as truncated, as a JPEG without EOI is refused.
- A zTXt/iCCP chunk inflating past PIL's 1 MB text limit: PIL refuses the
  file; we never inflate ancillary chunks and decode the pixels.
"""

import io
import os
import resource
import struct
import subprocess
import zlib

from pil_compare import (TOOL, DecodeError, Image, PilTestCase, decode, gradient, main, np,
                         pil_rgb)

# ---- PNG bytes built by hand ----

ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2),
         (0, 1, 1, 2)]
CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}


def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def pack_rows(samples, depth):
    """HxWxC samples to PNG rows, alternating filters None, Sub and Up so
    that the decoders' unfiltering is exercised."""
    h = samples.shape[0]
    flat = samples.reshape(h, -1).astype(np.uint32)
    if depth == 16:
        rows = [r.astype(">u2").tobytes() for r in flat]
    elif depth == 8:
        rows = [r.astype(np.uint8).tobytes() for r in flat]
    else:
        bits = (flat[:, :, None] >> np.arange(depth - 1, -1, -1)) & 1
        rows = [np.packbits(b.reshape(-1).astype(np.uint8)).tobytes() for b in bits]
    bpp = max(1, samples.shape[2] * depth // 8)
    out, prev = [], bytes(len(rows[0]))
    for y, row in enumerate(rows):
        r = np.frombuffer(row, np.uint8).astype(np.int32)
        if y % 3 == 1:
            left = np.concatenate([np.zeros(bpp, np.int32), r[:-bpp]])
            out.append(b"\x01" + ((r - left) & 255).astype(np.uint8).tobytes())
        elif y % 3 == 2:
            up = np.frombuffer(prev, np.uint8).astype(np.int32)
            out.append(b"\x02" + ((r - up) & 255).astype(np.uint8).tobytes())
        else:
            out.append(b"\x00" + row)
        prev = row
    return b"".join(out)


def png_bytes(samples, color_type, depth, palette=None, trns=None, interlace=False,
              before_idat=b"", idat_parts=1):
    h, w, _ = samples.shape
    if interlace:
        raw = b""
        for x0, y0, dx, dy in ADAM7:
            sub = samples[y0::dy, x0::dx]
            if sub.shape[0] and sub.shape[1]:
                raw += pack_rows(sub, depth)
    else:
        raw = pack_rows(samples, depth)
    data = zlib.compress(raw, 9)
    out = b"\x89PNG\r\n\x1a\n" + chunk(
        b"IHDR", struct.pack(">IIBBBBB", w, h, depth, color_type, 0, 0, int(interlace)))
    if palette is not None:
        out += chunk(b"PLTE", bytes(np.asarray(palette, np.uint8).reshape(-1)))
    if trns is not None:
        out += chunk(b"tRNS", trns)
    out += before_idat
    step = -(-len(data) // idat_parts)
    for i in range(0, len(data), step):
        out += chunk(b"IDAT", data[i:i + step])
    return out + chunk(b"IEND", b"")


def samples_for(h, w, channels, depth, seed=0, limit=None):
    rng = np.random.default_rng(seed)
    top = limit if limit is not None else 1 << depth
    return rng.integers(0, top, size=(h, w, channels), dtype=np.uint32)


def palette_of(n):
    return [((i * 37 + 5) % 256, (255 - i * 11) % 256, (i * i + 3) % 256) for i in range(n)]


def high_byte_rgb(path):
    """PIL's 16-bit gray (mode "I") cut to its high byte, as RGB."""
    with Image.open(path) as im:
        assert im.mode == "I", im.mode
        v = (np.asarray(im) >> 8).astype(np.uint8)
    return np.repeat(v[:, :, None], 3, axis=2)


def measured_run(args):
    """Runs args; returns (returncode, its peak RSS in KiB, ours before it).

    A vforked child's peak counts its parent's too, hence the baseline."""
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_maxrss, baseline


class PngVariantsTest(PilTestCase):
    """Every color type and bit depth, with and without tRNS, plain and
    Adam7, against PIL."""

    H, W = 19, 21

    def check(self, name, data, gray16=False, gray=False):
        p = self.write(name, data)
        want = high_byte_rgb(p) if gray16 else None
        self.assertSameAsPil(p, want)
        if gray:  # keep_gray: one channel, PIL's convert("L") (or the high byte)
            ours = decode(p, keep_gray=True)
            self.assertEqual(ours.shape[2], 1, p)
            with Image.open(p) as im:
                ref = (np.asarray(im) >> 8).astype(np.uint8) if gray16 else np.asarray(im.convert("L"))
            np.testing.assert_array_equal(ours[:, :, 0], ref, p)
        else:
            self.assertEqual(decode(p, keep_gray=True).shape[2], 3, p)

    def test_gray(self):
        for depth in (1, 2, 4, 8, 16):
            for interlace in (False, True):
                for trns in (False, True):
                    s = samples_for(self.H, self.W, 1, depth, seed=depth)
                    t = struct.pack(">H", int(s[0, 0, 0])) if trns else None
                    name = f"gray{depth}{'i' if interlace else ''}{'t' if trns else ''}.png"
                    self.check(name, png_bytes(s, 0, depth, trns=t, interlace=interlace),
                               gray16=depth == 16, gray=True)

    def test_gray_alpha(self):
        for depth in (8, 16):
            for interlace in (False, True):
                s = samples_for(self.H, self.W, 2, depth, seed=3)
                self.check(f"ga{depth}{interlace}.png", png_bytes(s, 4, depth, interlace=interlace),
                           gray=True)

    def test_rgb_and_rgba(self):
        for color_type, channels in ((2, 3), (6, 4)):
            for depth in (8, 16):
                for interlace in (False, True):
                    s = samples_for(self.H, self.W, channels, depth, seed=depth + channels)
                    t = None
                    if color_type == 2 and interlace:  # an RGB tRNS too
                        t = struct.pack(">HHH", *(int(v) for v in s[0, 0]))
                    self.check(f"c{color_type}d{depth}{interlace}.png",
                               png_bytes(s, color_type, depth, trns=t, interlace=interlace))

    def test_palette(self):
        for depth in (1, 2, 4, 8):
            n = 200 if depth == 8 else 1 << depth
            for interlace in (False, True):
                for trns in (None, bytes([0, 128, 0])):
                    s = samples_for(self.H, self.W, 1, depth, seed=depth, limit=n)
                    self.check(f"p{depth}{interlace}{trns is not None}.png",
                               png_bytes(s, 3, depth, palette=palette_of(n), trns=trns,
                                         interlace=interlace))

    def test_index_past_a_short_palette_reads_as_pils_gray_ramp(self):
        for depth in (2, 8):
            s = samples_for(self.H, self.W, 1, depth, seed=5)
            s[0, :4, 0] = [0, 1, 3, (1 << depth) - 1]
            p = self.write(f"short{depth}.png", png_bytes(s, 3, depth, palette=palette_of(2)))
            self.assertSameAsPil(p)
            self.assertEqual(decode(p)[0, 3].tolist(), [(1 << depth) - 1] * 3)

    def test_tiny_interlaced(self):
        for h, w in ((1, 1), (2, 3), (1, 5), (9, 1), (9, 9)):
            s = samples_for(h, w, 3, 8, seed=h * w)
            self.check(f"tiny{h}x{w}.png", png_bytes(s, 2, 8, interlace=True))

    def test_image_data_split_over_many_idat_chunks(self):
        s = samples_for(self.H, self.W, 3, 8, seed=9)
        self.check("split.png", png_bytes(s, 2, 8, idat_parts=7))


class PngWrittenByPilTest(PilTestCase):
    """Files PIL's own encoder writes (its filters, its chunk layout)."""

    def test_modes(self):
        rgba = gradient(37, 53, 4)
        base = Image.fromarray(rgba, "RGBA")
        for mode in ("RGB", "RGBA", "L", "LA", "1", "P"):
            p = self.path(f"{mode}.png")
            base.convert(mode).save(p)
            self.assertSameAsPil(p)

    def test_palette_with_transparency_and_low_bits(self):
        im = Image.fromarray(gradient(20, 30, 3)).convert("P", palette=Image.ADAPTIVE, colors=12)
        for bits in (None, 4):
            p = self.path(f"pt{bits}.png")
            kwargs = {"transparency": 3}
            if bits:
                kwargs["bits"] = bits
            im.save(p, **kwargs)
            self.assertSameAsPil(p)

    def test_apng_shows_its_default_image(self):
        # acTL/fcTL/fdAT are ancillary: skipped; IDAT is PIL's frame 0.
        frames = [Image.fromarray(gradient(20, 30, 3, seed=s)) for s in range(3)]
        for default_image in (False, True):
            p = self.path(f"apng{default_image}.png")
            frames[0].save(p, save_all=True, append_images=frames[1:], default_image=default_image)
            with Image.open(p) as im:
                self.assertGreater(im.n_frames, 1)
            self.assertSameAsPil(p)

    def test_sixteen_bit_gray_is_the_high_byte_not_pils_clip(self):
        v = (np.arange(40 * 30, dtype=np.int32).reshape(30, 40) * 53) % 65536
        p = self.path("i16.png")
        Image.fromarray(v.astype(np.uint16), "I;16").save(p)
        self.assertSameAsPil(p, high_byte_rgb(p))
        # The documented difference: PIL's convert("RGB") clips.
        self.assertFalse(np.array_equal(decode(p), pil_rgb(p)))

    def test_exif_orientation_is_not_applied(self):
        # PIL's convert("RGB") leaves an eXIf chunk's orientation alone (that
        # is ImageOps.exif_transpose's job): so do we. (TIFF's own
        # Orientation tag is applied: tiff_pil_test.py.)
        for orientation in (3, 6, 8):
            exif = Image.Exif()
            exif[0x0112] = orientation
            p = self.path(f"exif{orientation}.png")
            Image.fromarray(gradient(20, 30, 3)).save(p, exif=exif.tobytes())
            with Image.open(p) as im:
                self.assertEqual(im.getexif()[0x0112], orientation)
            self.assertSameAsPil(p)
            self.assertEqual(decode(p).shape, (20, 30, 3))

    def test_max_pixels(self):
        p = self.path("m.png")
        Image.fromarray(gradient(10, 12, 3)).save(p)
        with self.assertRaises(DecodeError) as cm:
            decode(p, max_pixels=119)
        self.assertIn(f"{p}: image too large: 12x10 PNG (limit: 119 pixels)", cm.exception.message)
        self.assertEqual(decode(p, max_pixels=120).shape, (10, 12, 3))


class PngRefusedTest(PilTestCase):

    def rgb_png(self):
        return png_bytes(samples_for(30, 40, 3, 8, seed=1), 2, 8)

    def test_cut_in_the_image_data_is_refused_as_pil_refuses_it(self):
        data = self.rgb_png()
        idat = data.index(b"IDAT")
        for n in (idat + 20, idat + 200, len(data) - 40):
            p = self.write(f"cut{n}.png", data[:n])
            self.assertRefused(p, "DATA_LOSS", f"@{n}: truncated PNG data")
            with self.assertRaises(OSError):
                pil_rgb(p)

    def test_cut_after_the_pixels_pil_decodes_we_refuse(self):
        # Cut in the zlib stream's Adler-32, the IDAT CRC, or IEND: PIL has
        # its rows and stops reading; we read to IEND.
        data = self.rgb_png()
        for n in (len(data) - 20, len(data) - 12, len(data) - 1):
            p = self.write(f"tail{n}.png", data[:n])
            np.testing.assert_array_equal(pil_rgb(p), samples_for(30, 40, 3, 8, seed=1))
            self.assertRefused(p, "DATA_LOSS", f"@{n}: truncated PNG data")
        self.assertRefused(self.write("noiend.png", data[:-12]),
                           "truncated PNG data: the file ends after the image data")

    def test_damaged_idat_is_refused(self):
        data = bytearray(self.rgb_png())
        data[data.index(b"IDAT") + 30] ^= 0x10
        self.assertRefused(self.write("crc.png", bytes(data)), "DATA_LOSS", "corrupt PNG data")

    def test_absurd_ihdr(self):
        ihdr = struct.pack(">IIBBBBB", 2**31 - 1, 2**31 - 1, 8, 2, 0, 0, 0)
        data = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", b"") +
                chunk(b"IEND", b""))
        p = self.write("huge.png", data)
        self.assertRefused(p, "INVALID_ARGUMENT", "image too large: 2147483647x2147483647 PNG")
        with self.assertRaises(Exception):
            pil_rgb(p)

    def test_text_and_icc_bombs_cost_neither_memory_nor_pils_refusal(self):
        squeeze = zlib.compressobj(9)
        zeros = bytes(1 << 20)
        bomb = b"".join(squeeze.compress(zeros) for _ in range(256)) + squeeze.flush()
        s = samples_for(30, 40, 3, 8, seed=2)
        for kind, body in ((b"zTXt", b"Comment\x00\x00" + bomb),
                           (b"iCCP", b"icc\x00\x00" + bomb)):
            p = self.write(f"{kind.decode()}.png", png_bytes(s, 2, 8, before_idat=chunk(kind, body)))
            self.assertLess(os.path.getsize(p), 1 << 20)
            with self.assertRaises(ValueError):  # "Decompressed Data Too Large"
                pil_rgb(p)
            code, peak_kib, baseline_kib = measured_run([TOOL, p])
            self.assertEqual(code, 0, p)
            # 256 MiB if it were inflated; the pixels are 3.6 KB.
            self.assertLess(peak_kib, baseline_kib + 64 * 1024, p)
            np.testing.assert_array_equal(decode(p), s.astype(np.uint8))


# ---- WebP ----

def riff(chunks):
    return b"RIFF" + struct.pack("<I", 4 + len(chunks)) + b"WEBP" + chunks


def wchunk(kind, data):
    return kind + struct.pack("<I", len(data)) + data + (b"\0" if len(data) % 2 else b"")


def image_chunks(still):
    """The ALPH/VP8/VP8L chunks of a still WebP file."""
    out, at = b"", 12
    while at + 8 <= len(still):
        kind, size = still[at:at + 4], struct.unpack("<I", still[at + 4:at + 8])[0]
        whole = 8 + size + size % 2
        if kind != b"VP8X":
            out += still[at:at + whole]
        at += whole
    return out


def le24(v):
    return struct.pack("<I", v)[:3]


def animation(canvas_w, canvas_h, frames):
    """frames: (x, y, w, h, still bytes)."""
    body = wchunk(b"VP8X", bytes([0x12, 0, 0, 0]) + le24(canvas_w - 1) + le24(canvas_h - 1))
    body += wchunk(b"ANIM", struct.pack("<IH", 0xFF336699, 0))
    for x, y, w, h, still in frames:
        body += wchunk(b"ANMF", le24(x // 2) + le24(y // 2) + le24(w - 1) + le24(h - 1) +
                       le24(100) + b"\0" + image_chunks(still))
    return riff(body)


def with_holes(rgba):
    """Every third pixel fully transparent over a color that is not black."""
    out = rgba.copy()
    out.reshape(-1, 4)[::3, 3] = 0
    out.reshape(-1, 4)[1::3, 3] = 90
    return out


def webp_of(array, **kwargs):
    buf = io.BytesIO()
    Image.fromarray(array).save(buf, "WEBP", **kwargs)
    return buf.getvalue()


class WebpTest(PilTestCase):

    def test_still_images(self):
        rgb = gradient(33, 47, 3)
        rgba = with_holes(gradient(33, 47, 4, seed=1))
        cases = {
            "lossy_rgb": webp_of(rgb, quality=80),
            "lossless_rgb": webp_of(rgb, lossless=True),
            "lossy_rgba": webp_of(rgba, quality=80),
            "lossless_rgba": webp_of(rgba, lossless=True),
            # The colors under alpha 0 are kept by the file, and by PIL.
            "lossless_rgba_exact": webp_of(rgba, lossless=True, exact=True),
            "gray": webp_of(gradient(33, 47, 1)[:, :, 0], lossless=True),
        }
        for name, data in cases.items():
            p = self.write(name + ".webp", data)
            self.assertSameAsPil(p)
            self.assertEqual(decode(p, keep_gray=True).shape[2], 3, p)
        exact = decode(self.path("lossless_rgba_exact.webp"))
        np.testing.assert_array_equal(exact, rgba[:, :, :3])

    def test_exif_orientation_is_not_applied(self):
        for orientation in (3, 6, 8):
            exif = Image.Exif()
            exif[0x0112] = orientation
            p = self.path(f"exif{orientation}.webp")
            Image.fromarray(gradient(20, 30, 3)).save(p, lossless=True, exif=exif.tobytes())
            with Image.open(p) as im:
                self.assertEqual(im.getexif()[0x0112], orientation)
            self.assertSameAsPil(p)
            self.assertEqual(decode(p).shape, (20, 30, 3))

    def test_animation_written_by_pil_shows_its_first_frame(self):
        frames = [Image.fromarray(gradient(30, 40, 4, seed=s), "RGBA") for s in range(3)]
        for lossless in (True, False):
            p = self.path(f"anim{lossless}.webp")
            frames[0].save(p, save_all=True, append_images=frames[1:], duration=40,
                           lossless=lossless)
            with Image.open(p) as im:
                self.assertEqual(im.n_frames, 3)
            self.assertSameAsPil(p)

    def test_first_frame_smaller_than_the_canvas(self):
        small = with_holes(gradient(8, 10, 4, seed=4))
        full = gradient(20, 24, 4, seed=5)
        for kwargs in ({"lossless": True, "exact": True}, {"quality": 70}):
            data = animation(24, 20, [(6, 4, 10, 8, webp_of(small, **kwargs)),
                                      (0, 0, 24, 20, webp_of(full, lossless=True))])
            p = self.write(f"offset{len(kwargs)}.webp", data)
            self.assertSameAsPil(p)
            ours = decode(p)
            self.assertEqual(ours[:4].max(), 0)  # outside frame 1: transparent black

    def test_cut_files_are_refused_as_pil_refuses_them(self):
        data = webp_of(gradient(30, 40, 3), quality=80)
        for n in (12, 30, len(data) // 2, len(data) - 1):  # from 12: sniffed as WebP
            p = self.write(f"cut{n}.webp", data[:n])
            self.assertRefused(p, "DATA_LOSS", f"@{n}: truncated WebP data")
            with self.assertRaises(Exception):
                pil_rgb(p)

    def test_absurd_canvas(self):
        p = self.write("huge.webp", animation(1 << 24, 1 << 24, []))  # past libwebp's 2^32
        self.assertRefused(p, "DATA_LOSS", "corrupt WebP data")
        p = self.write("big.webp", animation(20000, 20000, []))
        self.assertRefused(p, "INVALID_ARGUMENT", "image too large: 20000x20000 WebP")

    def test_max_pixels(self):
        p = self.write("m.webp", webp_of(gradient(10, 12, 3), lossless=True))
        with self.assertRaises(DecodeError) as cm:
            decode(p, max_pixels=119)
        self.assertIn(f"{p}: image too large: 12x10 WebP (limit: 119 pixels)", cm.exception.message)
        self.assertEqual(decode(p, max_pixels=120).shape, (10, 12, 3))


if __name__ == "__main__":
    main()
