"""Our BMP and PNM decoders beside PIL's Image.open(f).convert("RGB"), pixel
for pixel, on files PIL writes (1/8/24/32-bit BMP, P4/P5/P6) and files built
here with struct (every other header, depth, compression and plain PNM).
Where we differ from PIL 9.4 on purpose (codec/bmp.cc, codec/pnm.cc say
why), the expected pixels are PIL's decode of an equivalent file, or numpy's.
Run by ctest with DECODE_TO_RAW set."""

import struct

from pil_compare import (DecodeError, Image, PilTestCase, decode, gradient, main, np,
                         pil_rgb)

# --------------------------------------------------------------------- BMP


def pack_rows(rows, bits):
    """Rows of values (indices, or bytes for >8 bits) as BMP rows padded to
    4 bytes."""
    out = []
    for row in rows:
        if bits < 8:
            per = 8 // bits
            b = bytearray((len(row) + per - 1) // per)
            for x, v in enumerate(row):
                b[x // per] |= int(v) << (8 - bits * (x % per + 1))
        else:
            b = bytearray(bytes(row))
        b += b"\0" * (-len(b) % 4)
        out.append(bytes(b))
    return out


def info_header(size, w, h, bits, compression=0, colors=0, masks=None):
    """A BITMAPINFOHEADER of `size` bytes (40, 52, 56, 64, 108, 124); the
    masks R, G, B[, A] go where BITMAPV2+ headers hold them."""
    base = struct.pack("<IIIHHIIiiII", size, w & 0xFFFFFFFF, h & 0xFFFFFFFF, 1, bits,
                       compression, 0, 2835, 2835, colors, 0)
    rest = bytearray(size - 40)
    if masks and size > 40:
        m = struct.pack("<%dI" % len(masks), *masks)[:size - 40]
        rest[:len(m)] = m
    return base + bytes(rest)


def bmp(w, h, bits, pixel_rows, header=40, palette=None, colors=None, compression=0,
        masks=None, offbits=None, top_down=False, raw=None):
    """A BMP file: `pixel_rows` top row first (packed here), or `raw`
    pixel bytes as they are."""
    if header == 12:
        head = struct.pack("<IHHHH", 12, w, h, 1, bits)
    else:
        ncolors = len(palette) if colors is None and palette is not None else (colors or 0)
        head = info_header(header, w, -h if top_down else h, bits, compression, ncolors, masks)
        if masks and header == 40:
            head += struct.pack("<3I", *masks[:3])
    pal = b""
    for r, g, b in palette or []:
        pal += bytes([b, g, r]) + (b"" if header == 12 else b"\0")
    if raw is None:
        rows = pack_rows(pixel_rows, bits)
        raw = b"".join(rows if top_down else rows[::-1])
    start = 14 + len(head) + len(pal)
    off = start if offbits is None else offbits
    return b"BM" + struct.pack("<IHHI", start + len(raw), 0, 0, off) + head + pal + raw


def indices(h, w, n, seed=0):
    return gradient(h, w, 1, seed)[:, :, 0] % n


def rgb_bytes(img, order):
    """HxWx3 RGB as rows of bytes in `order` (e.g. "BGR", "BGRX", "XBGR")."""
    h, w, _ = img.shape
    chans = {"R": img[:, :, 0], "G": img[:, :, 1], "B": img[:, :, 2],
             "X": np.full((h, w), 0x5A, np.uint8), "A": np.full((h, w), 0x33, np.uint8)}
    planes = np.stack([chans[c] for c in order], axis=2)
    return [planes[y].tobytes() for y in range(h)]


def palette(n, seed=1):
    g = gradient(1, n, 3, seed)[0]
    return [tuple(int(v) for v in c) for c in g]


def rle8(rows):
    """RLE8 data: runs of equal values encoded, other stretches absolute,
    end of line after each row (file order: bottom row first), end of
    bitmap at the end."""
    out = bytearray()
    for row in rows[::-1]:
        row = [int(v) for v in row]
        x = 0
        while x < len(row):
            run = 1
            while x + run < len(row) and row[x + run] == row[x] and run < 255:
                run += 1
            if run >= 2 or len(row) - x < 3:
                out += bytes([run, row[x]])
                x += run
                continue
            end = x + 1
            while end < len(row) and end - x < 254 and (end + 1 >= len(row) or
                                                         row[end] != row[end + 1]):
                end += 1
            n = end - x
            n -= n % 2  # even runs: PIL 9.4 and we agree on them
            if n < 4:
                out += bytes([1, row[x]])
                x += 1
                continue
            out += bytes([0, n]) + bytes(row[x:x + n])
            x += n
        out += b"\0\0"
    return bytes(out + b"\0\1")


class BmpTest(PilTestCase):
    def check(self, name, data, gray=None):
        """Same as PIL; with keep_gray, 1 channel exactly when PIL's mode is
        "1" or "L" (`gray` states it, to keep the test honest)."""
        p = self.write(name, data)
        self.assertSameAsPil(p)
        with Image.open(p) as im:
            mode = im.mode
        if gray is not None:
            self.assertEqual(mode in ("1", "L"), gray, mode)
        ours = decode(p, keep_gray=True)
        want = pil_rgb(p)
        if mode in ("1", "L"):
            self.assertEqual(ours.shape[2], 1)
            self.assertTrue(np.array_equal(ours[:, :, 0], want[:, :, 0]))
        else:
            self.assertEqual(ours.shape[2], 3)
        return p

    def test_pil_written_every_mode_and_width(self):
        for w in (1, 2, 3, 5, 7, 8, 9, 13, 31, 33):
            img = gradient(5, w, 3, seed=w)
            for mode in ("1", "L", "P", "RGB", "RGBA"):
                im = Image.fromarray(img).convert(mode)
                p = self.path(f"pil_{mode}_{w}.bmp")
                im.save(p)
                self.assertSameAsPil(p)

    def test_indexed_depths_headers_and_short_palettes(self):
        for bits in (1, 4, 8):
            for header in (12, 40, 64, 108, 124):
                for n in sorted({2, 1 << bits, max(1, (1 << bits) // 2 + 1)}):
                    # Indices up to 2^bits - 1: those past a short palette
                    # take PIL's gray ramp.
                    idx = indices(7, 11, 1 << bits, seed=bits * header + n)
                    pal = palette(1 << bits if header == 12 else n, seed=n)
                    self.check(f"pal{bits}_{header}_{n}.bmp",
                               bmp(11, 7, bits, idx, header=header, palette=pal))

    def test_more_colors_than_the_depth_holds(self):
        idx = indices(3, 9, 2, seed=3)
        self.check("pal1_256.bmp", bmp(9, 3, 1, idx, palette=palette(256)))

    def test_gray_palettes_are_gray(self):
        idx = indices(4, 6, 256)
        self.check("gray8.bmp", bmp(6, 4, 8, idx, palette=[(i, i, i) for i in range(256)]),
                   gray=True)
        self.check("bw1.bmp", bmp(6, 4, 1, idx % 2, palette=[(0, 0, 0), (255, 255, 255)]),
                   gray=True)
        self.check("gray8_short.bmp", bmp(6, 4, 8, idx, palette=[(i, i, i) for i in range(100)]),
                   gray=True)
        self.check("almost_gray.bmp", bmp(6, 4, 8, idx, palette=[(i, i, i ^ (i == 7))
                                                                 for i in range(256)]),
                   gray=False)

    def test_gray_palette_at_another_depth_reads_the_file(self):
        # PIL 9.4 reads these pixels as 1 (or 8) bits whatever the depth;
        # we look them up at the file's depth. Expected: PIL on the same
        # pixels with a palette it takes for color, holding the same colors.
        idx = indices(4, 12, 4, seed=5)
        bw = [(0, 0, 0), (255, 255, 255)]
        as_color = bw + [(i, i, i) for i in range(2, 256)]
        want = pil_rgb(self.write("want.bmp", bmp(12, 4, 8, idx, palette=as_color)))
        p = self.write("bw8.bmp", bmp(12, 4, 8, idx, palette=bw))
        self.assertSameAsPil(p, want)
        self.assertEqual(decode(p, keep_gray=True).shape[2], 1)
        # PIL 9.4 refuses RLE with this palette ("unknown raw mode").
        rle = rle8(idx)
        want = pil_rgb(self.write("want_rle.bmp", bmp(12, 4, 8, None, palette=as_color,
                                                      compression=1, raw=rle)))
        self.assertSameAsPil(self.write("bw_rle.bmp", bmp(12, 4, 8, None, palette=bw,
                                                          compression=1, raw=rle)), want)
        idx = indices(4, 12, 16, seed=6)
        ramp = [(i, i, i) for i in range(16)]
        want = pil_rgb(self.write("want4.bmp", bmp(12, 4, 4, idx,
                                                   palette=ramp[:15] + [(15, 15, 16)]))).copy()
        self.assertTrue((idx == 15).any())
        want[idx == 15] = 15
        self.assertSameAsPil(self.write("gray4.bmp", bmp(12, 4, 4, idx, palette=ramp)), want)

    def test_16_bits(self):
        px = gradient(5, 7, 2, seed=9)
        rows = [px[y].tobytes() for y in range(5)]
        self.check("rgb555.bmp", bmp(7, 5, 16, None, raw=b"".join(pack_rows(rows, 16)[::-1])))
        for header in (40, 64, 108, 124):
            for masks in ((0xF800, 0x7E0, 0x1F, 0), (0x7C00, 0x3E0, 0x1F, 0)):
                self.check(f"bf16_{header}_{masks[0]:x}.bmp",
                           bmp(7, 5, 16, rows, header=header, compression=3, masks=masks))

    def test_24_and_32_bits(self):
        img = gradient(6, 9, 3, seed=4)
        for header in (12, 40, 64, 108, 124):
            self.check(f"rgb24_{header}.bmp", bmp(9, 6, 24, rgb_bytes(img, "BGR"), header=header))
            if header != 12:
                self.check(f"rgb32_{header}.bmp", bmp(9, 6, 32, rgb_bytes(img, "BGRX"),
                                                      header=header))
        self.check("bf24.bmp", bmp(9, 6, 24, rgb_bytes(img, "BGR"), compression=3,
                                   masks=(0xFF0000, 0xFF00, 0xFF)))
        layouts = [((0xFF0000, 0xFF00, 0xFF, 0), "BGRX"),
                   ((0xFF000000, 0xFF0000, 0xFF00, 0), "XBGR"),
                   ((0xFF000000, 0xFF0000, 0xFF00, 0xFF), "ABGR"),
                   ((0xFF, 0xFF00, 0xFF0000, 0xFF000000), "RGBA"),
                   ((0xFF0000, 0xFF00, 0xFF, 0xFF000000), "BGRA"),
                   ((0, 0, 0, 0), "BGRA")]
        for header in (40, 108, 124):
            for masks, order in layouts:
                if header == 40 and masks[3]:
                    continue  # a 40-byte header holds no alpha mask
                p = self.check(f"bf32_{header}_{order}_{masks[0]:x}.bmp",
                               bmp(9, 6, 32, rgb_bytes(img, order), header=header,
                                   compression=3, masks=masks))
                self.assertTrue(np.array_equal(decode(p), img), p)

    def test_top_down_and_offsets(self):
        img = gradient(5, 6, 3, seed=2)
        self.check("topdown24.bmp", bmp(6, 5, 24, rgb_bytes(img, "BGR"), top_down=True))
        idx = indices(5, 6, 16)
        self.check("topdown4.bmp", bmp(6, 5, 4, idx, palette=palette(16), top_down=True))
        # bfOffBits 0: the pixels follow the palette.
        self.check("off0.bmp", bmp(6, 5, 4, idx, palette=palette(16), offbits=0))
        # bfOffBits past a gap.
        data = bmp(6, 5, 24, rgb_bytes(img, "BGR"))
        gap = data[:10] + struct.pack("<I", 54 + 6) + data[14:54] + b"\xAA" * 6 + data[54:]
        self.check("gap.bmp", gap)

    def test_last_row_padding_may_be_missing(self):
        img = gradient(3, 5, 3, seed=8)
        data = bmp(5, 3, 24, rgb_bytes(img, "BGR"), top_down=True)
        p = self.write("nopad.bmp", data[:-1])
        with open(p, "rb") as f, Image.open(f) as im:  # as torchvision opens it
            want = np.asarray(im.convert("RGB"))
        self.assertSameAsPil(p, want)

    def test_52_and_56_byte_headers(self):
        # PIL 9.4 refuses them; Pillow reads them since 10.4: the same image
        # with a 40-byte header is what they hold.
        img = gradient(4, 5, 3, seed=6)
        idx = indices(4, 5, 256, seed=6)
        for header in (52, 56):
            want = pil_rgb(self.write("want.bmp", bmp(5, 4, 8, idx, palette=palette(256))))
            self.assertSameAsPil(self.write(f"pal8_{header}.bmp",
                                            bmp(5, 4, 8, idx, header=header, palette=palette(256))),
                                 want)
            masks = (0xFF0000, 0xFF00, 0xFF, 0xFF000000 if header == 56 else 0)
            p = self.write(f"bf32_{header}.bmp", bmp(5, 4, 32, rgb_bytes(img, "BGRA"),
                                                     header=header, compression=3, masks=masks))
            self.assertSameAsPil(p, img)

    def test_rle8_and_rle4(self):
        rng = np.random.default_rng(3)
        for w, h in ((1, 1), (7, 3), (16, 5), (33, 9), (300, 2)):
            # Runs, so that both encoded and absolute modes appear.
            idx = np.repeat(rng.integers(0, 16, size=(h, w // 3 + 1)), 3, axis=1)[:, :w]
            idx[:, ::5] = rng.integers(0, 16, size=idx[:, ::5].shape)
            pal = palette(16, seed=w)
            self.check(f"rle8_{w}x{h}.bmp",
                       bmp(w, h, 8, None, palette=pal, compression=1, raw=rle8(idx)))
            self.check(f"rle8td_{w}x{h}.bmp", bmp(w, h, 8, None, palette=pal, compression=1,
                                                  raw=rle8(idx[::-1]), top_down=True))
            self.check(f"rle4_{w}x{h}.bmp",
                       bmp(w, h, 4, None, palette=pal, compression=2, raw=rle4(idx)))
        gray = [(i, i, i) for i in range(256)]
        self.check("rle8_gray.bmp", bmp(4, 2, 8, None, palette=gray, compression=1,
                                        raw=rle8(np.array([[1, 1, 9, 200], [3, 4, 5, 6]]))),
                   gray=True)

    def test_rle_escapes_as_pil_reads_them(self):
        pal = palette(256, seed=7)
        cases = {
            # A run past the row's end is cut there; later runs in the row
            # are dropped until end of line.
            "cut": bytes([6, 1, 2, 2, 0, 0, 2, 3, 0, 0]),
            # End of line pads with index 0; an end of line on a full row
            # does nothing.
            "eol": bytes([1, 5, 0, 0, 4, 6, 0, 0, 0, 0]),
            # An absolute run flows into the next row.
            "spill": bytes([0, 6, 1, 2, 3, 4, 5, 6, 2, 7, 0, 0]),
            # End of bitmap once the image is full: fine.
            "eob": bytes([4, 1, 0, 0, 4, 2, 0, 1]),
            # Data after the image is full is not read.
            "after": bytes([4, 3, 0, 0, 4, 3, 0xFF, 0xFF, 0xFF]),
        }
        for name, data in cases.items():
            self.check(f"rle_{name}.bmp",
                       bmp(4, 2, 8, None, palette=pal, compression=1, raw=data))
        # RLE4 encoded runs alternate the byte's nibbles.
        self.check("rle4_nibbles.bmp", bmp(5, 1, 4, None, palette=palette(16), compression=2,
                                           raw=bytes([5, 0x12, 0, 1])))

    def test_rle_delta_and_odd_rle4_runs_as_the_spec_reads_them(self):
        # PIL 9.4 takes a delta's bytes from 2 bytes further on and an odd
        # RLE4 absolute run one byte short (fixed in later Pillow); the
        # expected pixels are PIL's decode of the same image without them.
        pal = palette(16, seed=2)
        delta = bytes([2, 5, 0, 2, 1, 1, 1, 6, 0, 0, 5, 7, 0, 1])  # right 1, up 1
        plain = bytes([2, 5, 3, 0, 0, 0, 3, 0, 1, 6, 1, 0, 0, 0, 5, 7, 0, 1])
        want = pil_rgb(self.write("want.bmp", bmp(5, 3, 8, None, palette=pal, compression=1,
                                                  raw=plain)))
        self.assertSameAsPil(self.write("delta.bmp", bmp(5, 3, 8, None, palette=pal,
                                                         compression=1, raw=delta)), want)
        odd = bytes([0, 5, 0x12, 0x34, 0x50, 0, 0, 0, 0, 1])
        even = bytes([0, 4, 0x12, 0x34, 1, 0x55, 0, 0, 0, 1])
        want = pil_rgb(self.write("want4.bmp", bmp(5, 1, 4, None, palette=pal, compression=2,
                                                   raw=even)))
        self.assertSameAsPil(self.write("odd4.bmp", bmp(5, 1, 4, None, palette=pal,
                                                        compression=2, raw=odd)), want)

    def refused_by_both(self, name, data, *fragments, returncode=1):
        p = self.write(name, data)
        with self.assertRaises(Exception, msg=f"PIL opens {name}"):
            pil_rgb(p)
        self.assertRefused(p, *fragments, returncode=returncode)

    def test_what_pil_refuses_we_refuse(self):
        idx = indices(2, 4, 4)
        good = bmp(4, 2, 8, idx, palette=palette(4))
        self.refused_by_both("hs20.bmp", good[:14] + struct.pack("<I", 20) + good[18:],
                             "unsupported BMP", "info header of 20 bytes")
        for bits in (0, 2, 7, 48):
            self.refused_by_both(f"bits{bits}.bmp", good[:28] + struct.pack("<H", bits) + good[30:],
                                 "unsupported BMP", f"{bits} bits per pixel")
        for comp in (4, 5, 6, 7):
            self.refused_by_both(f"comp{comp}.bmp",
                                 bmp(4, 2, 24, rgb_bytes(gradient(2, 4, 3), "BGR"),
                                     compression=comp),
                                 "unsupported BMP", f"compression {comp}")
        self.refused_by_both("bf_odd.bmp", bmp(4, 2, 32, rgb_bytes(gradient(2, 4, 3), "BGRX"),
                                               compression=3, masks=(0xFF00, 0xFF, 0xFF0000)),
                             "unsupported BMP", "bit fields")
        self.refused_by_both("bf8.bmp", bmp(4, 2, 8, idx, palette=palette(4), compression=3,
                                            masks=(0xE0, 0x1C, 0x3)),
                             "unsupported BMP", "bit fields")
        self.refused_by_both("rle24.bmp", bmp(4, 2, 24, None, compression=1, raw=b"\4\1\0\1"),
                             "unsupported BMP", "RLE8 at 24 bits")
        self.refused_by_both("pal300.bmp", bmp(4, 2, 8, idx, palette=palette(300)),
                             "unsupported BMP", "palette of 300 colors")

    def test_damage_we_refuse_as_pil_does(self):
        pal = palette(16)
        self.refused_by_both("early_eob.bmp", bmp(4, 2, 8, None, palette=pal, compression=1,
                                                  raw=bytes([4, 1, 0, 1])),
                             "corrupt BMP data", "end of bitmap after 4 of 8 pixels", "@")
        self.refused_by_both("rle_cut.bmp", bmp(4, 2, 8, None, palette=pal, compression=1,
                                                raw=bytes([4, 1, 2])),
                             "truncated BMP", "RLE data ends after 4 of 8 pixels")
        good = bmp(5, 3, 24, rgb_bytes(gradient(3, 5, 3), "BGR"))
        for cut in (14, 20, 53, 54, 60, len(good) - 20):
            self.refused_by_both(f"cut{cut}.bmp", good[:cut], "BMP", "@")
        self.refused_by_both("off_past.bmp", good[:10] + struct.pack("<I", 10**6) + good[14:],
                             "corrupt BMP data", "pixel data offset 1000000 is past the end")

    def test_absurd_sizes_are_refused_before_allocation(self):
        for w, h in ((1 << 31, 1 << 31), (0x7FFFFFFF, 1), (65535, 65535)):
            p = self.write(f"huge_{w}_{h}.bmp", b"BM" + struct.pack("<IHHI", 70, 0, 0, 54) +
                           info_header(40, w, h, 24) + b"\0" * 16)
            self.assertRefused(p, "image too large")
        p = self.write("neg.bmp", bmp(2, 2, 24, None, raw=b"\0" * 16)[:22] +
                       struct.pack("<i", -(1 << 31)) + bmp(2, 2, 24, None, raw=b"\0" * 16)[26:])
        self.assertRefused(p, "image too large")


def rle4(rows):
    """RLE4 data: equal runs encoded (both nibbles the value), even-length
    absolute runs otherwise, end of line after each row, end of bitmap."""
    out = bytearray()
    for row in rows[::-1]:
        row = [int(v) for v in row]
        x = 0
        while x < len(row):
            run = 1
            while x + run < len(row) and row[x + run] == row[x] and run < 255:
                run += 1
            if run == 1 and len(row) - x >= 4 and len(set(row[x:x + 4])) > 1:
                n = 4
                nib = row[x:x + n]
                out += bytes([0, n, nib[0] << 4 | nib[1], nib[2] << 4 | nib[3]])
                x += n
                continue
            out += bytes([run, row[x] << 4 | row[x]])
            x += run
        out += b"\0\0"
    return bytes(out + b"\0\1")


# --------------------------------------------------------------------- PNM


def pnm(magic, w, h, maxval, samples, plain, comment=b""):
    head = b"P%d\n%s%d %d\n" % (magic, comment, w, h)
    if maxval is not None:
        head += b"%d\n" % maxval
    if plain:
        per_line = 7
        lines = [b" ".join(b"%d" % v for v in samples[i:i + per_line])
                 for i in range(0, len(samples), per_line)]
        return head + b"\n".join(lines) + b"\n"
    if maxval is not None and maxval > 255:
        return head + struct.pack(">%dH" % len(samples), *samples)
    return head + bytes(samples)


def scaled(v, maxval):
    """round(v / maxval * 255) as numpy computes it (ties to even), clipped."""
    return np.minimum(np.round(np.asarray(v, np.float64) / maxval * 255), 255).astype(np.uint8)


class PnmTest(PilTestCase):
    def test_pil_written(self):
        for w in (1, 7, 8, 9, 17):
            img = gradient(4, w, 3, seed=w)
            for mode, ext in (("1", "pbm"), ("L", "pgm"), ("RGB", "ppm")):
                p = self.path(f"pil_{mode}_{w}.{ext}")
                Image.fromarray(img).convert(mode).save(p)
                self.assertSameAsPil(p)
                if mode != "RGB":
                    self.assertEqual(decode(p, keep_gray=True).shape[2], 1)

    def test_every_kind_and_maxval(self):
        rng = np.random.default_rng(1)
        w, h = 5, 3
        for maxval in (1, 2, 3, 6, 15, 100, 254, 255, 256, 1000, 4095, 65534, 65535):
            for magic in (2, 3, 5, 6):
                n = w * h * (3 if magic in (3, 6) else 1)
                v = rng.integers(0, maxval + 1, size=n)
                v[: min(n, maxval + 1)] = np.arange(min(n, maxval + 1))
                p = self.write(f"p{magic}_{maxval}.pnm",
                               pnm(magic, w, h, maxval, [int(x) for x in v], plain=magic < 4))
                want = scaled(v, maxval).reshape(h, w, -1)
                if want.shape[2] == 1:
                    want = np.repeat(want, 3, axis=2)
                if maxval <= 255 or magic in (3, 6):
                    # PIL scales these too, as round(v / maxval * 255).
                    self.assertTrue(np.array_equal(pil_rgb(p), want), p)
                # PGM over 255: PIL clips mode "I"; we scale (decode.h).
                self.assertSameAsPil(p, want)
                if magic in (2, 5):
                    self.assertEqual(decode(p, keep_gray=True).shape[2], 1)

    def test_bitmaps(self):
        rng = np.random.default_rng(2)
        for w in (1, 3, 8, 9, 20):
            bits = rng.integers(0, 2, size=(4, w))
            plain = b"P1\n%d 4\n" % w + b"\n".join(b"".join(b"%d" % b for b in row) for row in bits)
            p = self.write(f"p1_{w}.pbm", plain)
            self.assertSameAsPil(p)
            self.assertSameAsPil(p, np.repeat(((1 - bits) * 255).astype(np.uint8)[:, :, None], 3, 2))
            spaced = b"P1 %d 4 " % w + b" ".join(b"%d" % b for b in bits.flatten())
            self.assertSameAsPil(self.write(f"p1s_{w}.pbm", spaced))
            packed = np.packbits(bits, axis=1)
            p = self.write(f"p4_{w}.pbm", b"P4\n%d 4\n" % w + packed.tobytes())
            self.assertSameAsPil(p)
            self.assertEqual(decode(p, keep_gray=True).shape[2], 1)

    def test_comments_and_whitespace(self):
        body = bytes(range(0, 240, 10))
        for name, data in {
            "comments": b"P5\n# a comment\n4 # width\n#\n 2\r\n255\n" + body[:8],
            "tabs": b"P5\t4\x0b2\x0c255\r" + body[:8],
            "cr_comment": b"P6 # ends at CR\r2 1 255\n" + body[:6],
            "in_token": b"P5\n4#split\n 2 255\n" + body[:8],
            "plain_comments": b"P2\n2 2\n15\n# first\n1 2 #c\n3\n4\n",
            "plain_glued": b"P2\n2 1\n99\n1#c\n2 3\n",
            "p1_comment": b"P1\n3 1 #x\n1#0\n01",
        }.items():
            self.assertSameAsPil(self.write(name + ".pnm", data))
        self.assertSameAsPil(self.path("plain_glued.pnm"),
                             np.array([[[31] * 3, [8] * 3]], np.uint8))

    def refused_by_both(self, name, data, *fragments):
        p = self.write(name, data)
        with self.assertRaises(Exception, msg=f"PIL opens {name}"):
            pil_rgb(p)
        self.assertRefused(p, *fragments)

    def test_damage(self):
        self.refused_by_both("over.pgm", b"P2\n2 1\n10\n5 11\n",
                             "@12:", "corrupt PNM data: sample 11 is over maxval 10")
        self.refused_by_both("missing.ppm", b"P3\n2 1\n255\n1 2 3 4 5\n",
                             "truncated PNM", "5 of 6 samples")
        self.refused_by_both("garbage.pgm", b"P2\n2 1\n255\n1 x2\n",
                             "@13:", "'x2' is not a number")
        self.refused_by_both("long.pgm", b"P2\n1 1\n255\n00000000001\n",
                             "@11:", "over 10 characters")
        self.refused_by_both("p1_2.pbm", b"P1\n2 1\n12\n", "@8:", "'2' in a plain PBM")
        self.refused_by_both("p1_trailing.pbm", b"P1\n2 1\n10 x\n", "@10:", "'x' in a plain PBM")
        self.refused_by_both("p1_short.pbm", b"P1\n2 2\n101\n", "truncated PNM")
        self.refused_by_both("maxval0.pgm", b"P5\n1 1\n0\n\0", "maxval 0")
        self.refused_by_both("maxval_big.pgm", b"P5\n1 1\n65536\n\0\0", "maxval 65536")
        self.refused_by_both("raw_cut.ppm", b"P6\n2 2\n255\n" + bytes(11), "truncated PNM",
                             "1 of 2 rows")
        self.refused_by_both("raw16_cut.pgm", b"P5\n2 1\n1000\n" + bytes(3), "truncated PNM")
        self.refused_by_both("header_cut.pgm", b"P5\n2 ", "file ends before the height")
        self.refused_by_both("width_text.pgm", b"P5\nab 1 255\n\0", "'ab' is not a number")

    def test_raw_samples_over_maxval_are_clipped_as_pil_clips_them(self):
        p = self.write("clip.pgm", b"P5\n4 1\n100\n" + bytes([0, 50, 100, 200]))
        self.assertSameAsPil(p)
        p = self.write("clip16.ppm", b"P6\n1 1\n300\n" + struct.pack(">3H", 0, 299, 65535))
        self.assertSameAsPil(p)

    def test_absurd_sizes(self):
        for dims in (b"2147483648 2147483648", b"9999999999 1", b"65536 65536"):
            self.assertRefused(self.write("huge.pgm", b"P5\n" + dims + b"\n255\n\0"),
                               "image too large")
        self.assertRefused(self.write("small_plain.pgm", b"P2\n1000 1000\n255\n1 2 3\n"),
                           "truncated PNM", "cannot hold 1000000 pixels")


if __name__ == "__main__":
    main()
