#include "codec/jpeg_entropy.h"

// jpegint.h: the decompressor's module interfaces (jpeg_entropy_decoder,
// jpeg_marker_reader, jpeg_decomp_master), installed with libjpeg-turbo's
// headers; jerror.h: the warning codes libjpeg's own decoder emits.
#include <jerror.h>
#include <jpegint.h>

#include <algorithm>
#include <cstring>

namespace shardpack::codec {
namespace {

constexpr int kLook = JpegEntropyDecoder::kLookupBits;

// Zigzag position -> natural (row-major) position, with 16 more entries for
// a run that overshoots the block in damaged data: they write position 63,
// as libjpeg's jpeg_natural_order does.
constexpr int kNaturalOrder[64 + 16] = {
    0,  1,  8,  16, 9,  2,  3,  10, 17, 24, 32, 25, 18, 11, 4,  5,  12, 19, 26, 33,
    40, 48, 41, 34, 27, 20, 13, 6,  7,  14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36,
    29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54,
    47, 55, 62, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63};

// The value of `size` extra bits `v` (JPEG's EXTEND, F.2.2.1); size 1..15.
inline int Extend(uint32_t v, int size) {
  return v < (1u << (size - 1)) ? static_cast<int>(v) - (1 << size) + 1 : static_cast<int>(v);
}

// Lookup entries. Bits 0-4: the bits to drop. Bit 7 clear: the code alone
// is resolved, and bits 8-15 hold its symbol; the entry 0 means a code
// longer than kLook bits. Bit 7 set ("fused"): the code and its extra bits
// are, and bits 8-11 hold the run of zeros before the coefficient, bits
// 12-18 how far it moves the zigzag index (run + 1; 16 for a run of 16
// zeros, 64 for end of block: those store a harmless zero), bits 20-31 the
// value (signed; fused extra bits are at most kLook - 1 = 9, so it fits).
constexpr uint32_t kFused = 0x80;
inline int FusedRun(uint32_t e) { return static_cast<int>((e >> 8) & 15); }
inline int FusedAdvance(uint32_t e) { return static_cast<int>((e >> 12) & 127); }
inline int FusedValue(uint32_t e) { return static_cast<int32_t>(e) >> 20; }

// Skip entries: bits 0-4 the bits of the whole fused symbols that start the
// next kSkipBits or kWideSkipBits (0: not even one), bits 8-14 how far they
// move the zigzag index (end of block counting 1), bit 15 set when the last
// is the end of block. Two widths: the narrow lookups are cheap to build
// (4,096 entries), the wide ones (16,384 entries, 32 KiB: still in a 48 KiB
// L1) take more symbols per lookup: -8 us a photograph skipping the rows
// above a crop, once they exist.
constexpr int kSkipBits = 12;
constexpr int kWideSkipBits = 14;
constexpr uint32_t kEndsBlock = 0x8000;

// Pair entries, for AC blocks whose coefficients are kept: up to two fused
// symbols that fit wholly in the next kPairBits bits. Bits 0-4: their bits
// (0: not even one); 8-11: the first coefficient's index offset (its run);
// 12-16: the second's (when there is none, the first's: its zero is stored
// before the first value); 17-22: how far both move the zigzag index (end
// of block counting 1); 23: the last is the end of block; 32-47 and 48-63:
// the two values.
constexpr int kPairBits = 11;
constexpr uint64_t kPairEndsBlock = uint64_t{1} << 23;

// When the multi-symbol lookups are built. Skip lookups: once a table has
// skipped about as many blocks as building them costs in single lookups
// (they repay it within one photograph); the wide ones once it has skipped
// about as many as repay their build over the narrow ones (21 us, 6 ns a
// block: a few photographs with the same tables, or one large image with
// its own). Pair lookups gain less per block:
// only for a table that another image used before (the standard tables of
// cameras and encoders), not for a file's own optimized tables.
constexpr int kBlocksBeforeSkips = 400;
constexpr int kBlocksBeforeWideSkips = 4000;
constexpr int kBlocksBeforePairs = 200;

}  // namespace

struct JpegEntropyDecoder::Table {
  // The key: the table as the file defines it.
  bool dc = false;
  uint64_t scan_stamp = 0;  // the last Install that used this table
  uint8_t bits[17] = {};
  uint8_t vals[256] = {};
  // Canonical decoding of codes longer than kLook bits (libjpeg's maxcode and
  // valoffset; maxcode[17] is a sentinel).
  int32_t maxcode[18] = {};
  int32_t valoffset[18] = {};
  uint32_t lut[1 << kLook] = {};
  // For AC blocks whose coefficients are not kept (rows jpeg_skip_scanlines
  // passes over, columns outside jpeg_crop_scanline's): the next
  // skip_bits bits as whole symbols, several per lookup (the skip entries
  // above), from `skip` or, once built, `skip_wide`.
  int skip_bits = 0;  // kSkipBits or kWideSkipBits once built
  uint16_t skip[1 << kSkipBits] = {};
  uint16_t skip_wide[1 << kWideSkipBits] = {};
  // For AC blocks whose coefficients are kept: up to two coefficients per
  // lookup (the pair entries above).
  bool pair_built = false;
  uint64_t pair[1 << kPairBits] = {};
  // Blocks served before those lookups exist, and scans that used the table
  // (kBlocksBeforeSkips, kBlocksBeforePairs).
  int skip_blocks = 0, pair_blocks = 0, scans = 0;

  bool Matches(const JHUFF_TBL& h, bool is_dc) const {
    return dc == is_dc && std::memcmp(bits, h.bits, sizeof(bits)) == 0 &&
           std::memcmp(vals, h.huffval, sizeof(vals)) == 0;
  }
  void Build(const JHUFF_TBL& h, bool is_dc);
  void Fill(uint32_t code, int length, int symbol);
  template <int kBits>
  void BuildSkip();
  // Counts a skipped block and builds the skip lookups when they repay it.
  void SkippedBlock() {
    if (++skip_blocks == kBlocksBeforeSkips || skip_blocks == kBlocksBeforeWideSkips) {
      BuildSkipNow();
    }
  }
  [[gnu::noinline, gnu::cold]] void BuildSkipNow() {
    skip_blocks == kBlocksBeforeSkips ? BuildSkip<kSkipBits>() : BuildSkip<kWideSkipBits>();
  }
  void BuildPair();
  // The fused entry of the symbol at bit `used` of the kBits-bit string
  // `string`, or 0 when there is none that fits wholly.
  template <int kBits>
  uint32_t FusedAt(uint32_t string, int used) const {
    static_assert(kBits >= kLook);
    const uint32_t window = (string << used) & ((1u << kBits) - 1);
    const uint32_t e = lut[window >> (kBits - kLook)];
    return (e & kFused) && static_cast<int>(e & 31) <= kBits - used ? e : 0;
  }
};

void JpegEntropyDecoder::Table::Build(const JHUFF_TBL& h, bool is_dc) {
  dc = is_dc;
  std::memcpy(bits, h.bits, sizeof(bits));
  std::memcpy(vals, h.huffval, sizeof(vals));
  std::fill(std::begin(lut), std::end(lut), 0u);
  skip_bits = 0;
  pair_built = false;
  skip_blocks = 0;
  pair_blocks = 0;
  scans = 0;
  // Canonical codes (JPEG C.2). libjpeg's jpeg_make_d_derived_tbl checked
  // this table when the scan started (else the decode failed there); the
  // bounds are kept anyway so that no table can index out of range.
  int p = 0;
  uint32_t code = 0;
  for (int l = 1; l <= 16; ++l) {
    const int n = std::min<int>(bits[l], 256 - p);
    maxcode[l] = n > 0 ? static_cast<int32_t>(code) + n - 1 : -1;
    valoffset[l] = p - static_cast<int32_t>(code);
    for (int i = 0; i < n; ++i, ++p, ++code) {
      if (l <= kLook && code < (1u << l)) Fill(code, l, vals[p]);
    }
    code <<= 1;
  }
  maxcode[17] = 0xFFFFF;
  valoffset[17] = 0;
}

// The lookup entries of one code of `length` <= kLook bits: every kLook-bit
// string it starts. Where the code's extra bits fit too, the entry holds the
// value: the strings that share a value of the extra bits form a run of
// equal entries, filled at once (a file's own tables are built per image).
void JpegEntropyDecoder::Table::Fill(uint32_t code, int length, int symbol) {
  const int size = dc ? symbol : (symbol & 15);  // extra bits
  const int spare = kLook - length;
  uint32_t* const first = lut + (code << spare);
  if (size > spare) {
    std::fill(first, first + (1u << spare),
              (static_cast<uint32_t>(symbol) << 8) | static_cast<uint32_t>(length));
    return;
  }
  const int run = dc ? 0 : symbol >> 4;
  const int advance = dc || size != 0 ? run + 1 : (symbol == 0xF0 ? 16 : 64);
  const uint32_t fused = (static_cast<uint32_t>(advance) << 12) |
                         (static_cast<uint32_t>(run) << 8) | kFused |
                         static_cast<uint32_t>(length + size);
  const uint32_t span = 1u << (spare - size);  // strings per value of the extra bits
  for (uint32_t v = 0; v < (1u << size); ++v) {
    const int value = size == 0 ? 0 : Extend(v, size);
    std::fill(first + v * span, first + (v + 1) * span,
              (static_cast<uint32_t>(value) << 20) | fused);
  }
}

// Each entry chains the fused symbols that fit wholly in its kBits bits, up
// to an end of block.
template <int kBits>
void JpegEntropyDecoder::Table::BuildSkip() {
  static_assert(kBits == kSkipBits || kBits == kWideSkipBits);
  uint16_t* const out = kBits == kWideSkipBits ? skip_wide : skip;
  for (uint32_t i = 0; i < (1u << kBits); ++i) {
    int used = 0, advance = 0;
    uint32_t ends = 0;
    // Chained while the index stays in a block (an entry that moves it past
    // 64 could never be used, and its advance must fit 7 bits).
    while (uint32_t e = FusedAt<kBits>(i, used)) {
      const bool end = FusedAdvance(e) == 64;
      const int next = advance + (end ? 1 : FusedAdvance(e));
      if (next > DCTSIZE2) break;
      used += static_cast<int>(e & 31);
      advance = next;
      if (end) {
        ends = kEndsBlock;
        break;
      }
    }
    out[i] = static_cast<uint16_t>(ends | (static_cast<uint32_t>(advance) << 8) |
                                   static_cast<uint32_t>(used));
  }
  skip_bits = kBits;
}

void JpegEntropyDecoder::Table::BuildPair() {
  for (uint32_t i = 0; i < (1u << kPairBits); ++i) {
    const uint32_t first = FusedAt<kPairBits>(i, 0);
    if (first == 0) {
      pair[i] = 0;
      continue;
    }
    int used = static_cast<int>(first & 31);
    // An end of block moves the index 1 (its zero lands on an unwritten
    // place); a run of 16 zeros 16 (its zero at the run's end).
    const bool first_ends = FusedAdvance(first) == 64;
    const int advance1 = first_ends ? 1 : FusedAdvance(first);
    const uint32_t second = first_ends ? 0 : FusedAt<kPairBits>(i, used);
    int advance = advance1;
    bool ends = first_ends;
    int offset2 = FusedRun(first);  // with no second symbol: the first's place
    uint64_t value2 = 0;
    if (second != 0) {
      used += static_cast<int>(second & 31);
      ends = FusedAdvance(second) == 64;
      offset2 = advance1 + FusedRun(second);
      advance += ends ? 1 : FusedAdvance(second);
      value2 = static_cast<uint16_t>(FusedValue(second));
    }
    pair[i] = (value2 << 48) | (uint64_t{static_cast<uint16_t>(FusedValue(first))} << 32) |
              (ends ? kPairEndsBlock : 0) | (static_cast<uint64_t>(advance) << 17) |
              (static_cast<uint64_t>(offset2) << 12) |
              (static_cast<uint64_t>(FusedRun(first)) << 8) | static_cast<uint64_t>(used);
  }
  pair_built = true;
}

struct JpegEntropyDecoder::Scan {
  j_decompress_ptr cinfo = nullptr;
  // The input, and the bit buffer: `nbits` bits at the top of `buf`, the
  // rest zero. After the entropy-coded data ends (a marker, or the input's
  // end) zeros are appended; `fake` counts those still in the buffer.
  const uint8_t* pos = nullptr;
  const uint8_t* end = nullptr;
  uint64_t buf = 0;
  int64_t nbits = 0;
  int fake = 0;
  bool at_marker = false;
  // Per block of an MCU.
  int blocks = 0;
  const Table* dc[D_MAX_BLOCKS_IN_MCU] = {};
  Table* ac[D_MAX_BLOCKS_IN_MCU] = {};
  int component[D_MAX_BLOCKS_IN_MCU] = {};
  bool ac_needed[D_MAX_BLOCKS_IN_MCU] = {};
  // DC predictions (unsigned: damaged data may add up past int32, and
  // libjpeg's wrap-around is kept without undefined behaviour).
  uint32_t last_dc[MAX_COMPS_IN_SCAN] = {};
  unsigned int restarts_to_go = 0;
  // The MCU column about to be decoded, and jpeg_crop_scanline's columns:
  // coefficients outside them are decoded but not stored (libjpeg does not
  // use them).
  JDIMENSION mcu_col = 0, mcus_per_row = 0, first_col = 0, last_col = 0;
  uint64_t mcus_left = 0;  // in the scan
};

namespace {

using Scan = JpegEntropyDecoder::Scan;
using Table = JpegEntropyDecoder::Table;

// The bit buffer and the input position, kept in registers while an MCU is
// decoded (Scan holds them between MCUs): `nbits` bits at the top of `buf`,
// the rest zero. Below `limit`, 8 bytes can be read at `pos`.
struct Bits {
  uint64_t buf;
  int64_t nbits;
  const uint8_t* pos;
  const uint8_t* limit;
};

inline const uint8_t* FastLimit(const Scan& s) { return s.end - s.pos >= 8 ? s.end - 7 : s.pos; }

[[gnu::always_inline]] inline uint32_t Peek(const Bits& b, int n) { return static_cast<uint32_t>(b.buf >> (64 - n)); }
[[gnu::always_inline]] inline void Drop(Bits& b, int n) {
  b.buf <<= n;
  b.nbits -= n;
}

// Asks the data source for more input (jpeg_mem_src warns "premature end of
// JPEG file" and hands over a fake EOI marker), as libjpeg's bit reader does.
void FillInput(Scan& s) {
  jpeg_source_mgr* src = s.cinfo->src;
  src->next_input_byte = s.pos;
  src->bytes_in_buffer = 0;
  if (!(*src->fill_input_buffer)(s.cinfo)) {  // suspension: no more data now
    s.at_marker = true;
    return;
  }
  s.pos = src->next_input_byte;
  s.end = s.pos + src->bytes_in_buffer;
}

// Byte by byte: 0xFF 0x00 is a data byte 0xFF, 0xFF fill bytes are skipped,
// and any other marker ends the data (left unread, for libjpeg's marker
// reader), after which zeros are appended (counted in s.fake).
[[gnu::noinline]] Bits RefillSlow(Scan& s, Bits b) {
  s.pos = b.pos;
  while (b.nbits <= 56) {
    if (s.at_marker) {
      s.fake += static_cast<int>(64 - b.nbits);
      b.nbits = 64;
      break;
    }
    if (s.pos >= s.end) {
      FillInput(s);
      continue;
    }
    uint32_t c = *s.pos;
    if (c == 0xFF) {
      const uint8_t* q = s.pos + 1;
      while (q < s.end && *q == 0xFF) ++q;
      if (q >= s.end) {  // the input ends inside a marker
        s.pos = q;
        continue;
      }
      if (*q != 0) {
        s.at_marker = true;
        continue;
      }
      s.pos = q + 1;
    } else {
      ++s.pos;
    }
    b.buf |= uint64_t{c} << (56 - b.nbits);
    b.nbits += 8;
  }
  b.pos = s.pos;
  b.limit = FastLimit(s);
  return b;
}

// Tops the buffer up with whole bytes: up to 56 bits from the next 8 bytes
// that come before any 0xFF in them, and byte by byte (RefillSlow) only
// when that leaves fewer than 32 (a marker or a stuffed byte right ahead,
// or the input's end). With a restart marker after every MCU, taking the
// bytes up to the marker keeps most MCUs' last refills off the slow path.
[[gnu::always_inline]] inline void Refill(Scan& s, Bits& b) {
  if (b.pos < b.limit) {
    uint64_t v;
    std::memcpy(&v, b.pos, 8);
    v = __builtin_bswap64(v);
    const uint64_t x = ~v;  // a 0xFF byte of v is a zero byte of x
    // Flags each zero byte of x, and possibly bytes before one (a borrow):
    // never a byte before the first 0xFF is missed, so `take` never
    // passes it.
    const uint64_t ff = (x - 0x0101010101010101ull) & ~x & 0x8080808080808080ull;
    const int room = static_cast<int>((63 - b.nbits) >> 3);  // 1 to 7: nbits < 56
    const int take = ff == 0 ? room : std::min(room, __builtin_clzll(ff) >> 3);
    b.buf |= (v & ~(~0ull >> (take * 8))) >> b.nbits;
    b.nbits += take * 8;
    b.pos += take;
    if (b.nbits >= 32) return;
  }
  b = RefillSlow(s, b);
}

// A code longer than kLook bits, from the next 16 bits: the lookup entry of
// its symbol (not fused), or 0 when no code matches (damaged data).
[[gnu::noinline]] uint32_t LongCode(const Table& t, uint32_t bits16) {
  for (int l = kLook + 1; l <= 16; ++l) {
    const auto code = static_cast<int32_t>(bits16 >> (16 - l));
    if (code <= t.maxcode[l]) {
      return (uint32_t{t.vals[(code + t.valoffset[l]) & 0xFF]} << 8) | static_cast<uint32_t>(l);
    }
  }
  return 0;
}

// The symbol of a lookup entry that is not fused, with its code dropped.
// Needs 16 bits in the buffer.
[[gnu::always_inline]] inline int Symbol(Scan& s, Bits& b, const Table& t, uint32_t e) {
  if (e == 0) {
    e = LongCode(t, Peek(b, 16));
    if (e == 0) {
      Drop(b, 16);
      WARNMS(s.cinfo, JWRN_HUFF_BAD_CODE);  // libjpeg's "bad Huffman code",
      return 0;                             // and, as libjpeg, a zero
    }
  }
  Drop(b, static_cast<int>(e & 31));
  return static_cast<int>((e >> 8) & 0xFF);
}

// `size` extra bits as a value, dropped. Needs `size` bits in the buffer.
[[gnu::always_inline]] inline int ExtraBits(Bits& b, int size) {
  if (size == 0) return 0;
  const int value = Extend(Peek(b, size), size);
  Drop(b, size);
  return value;
}

// One block: the DC difference, then the AC coefficients (stored at `block`
// when kStoreAc). `block` null: nothing stored. Each symbol is checked for
// 32 bits in the buffer: a code and its extra bits take at most 31.
template <bool kStoreAc>
[[gnu::always_inline]] inline void DecodeBlock(Scan& s, Bits& b, int blk, JCOEF* block) {
  if (b.nbits < 32) Refill(s, b);
  const Table& dc = *s.dc[blk];
  uint32_t e = dc.lut[Peek(b, kLook)];
  int diff;
  if (e & kFused) {
    Drop(b, static_cast<int>(e & 31));
    diff = FusedValue(e);
  } else {
    diff = ExtraBits(b, Symbol(s, b, dc, e) & 15);  // a DC symbol is a size
  }
  const int c = s.component[blk];
  s.last_dc[c] += static_cast<uint32_t>(diff);
  if (block != nullptr) block[0] = static_cast<JCOEF>(static_cast<int32_t>(s.last_dc[c]));
  Table& ac = *s.ac[blk];
  if (!kStoreAc && ac.skip_bits != kWideSkipBits) ac.SkippedBlock();
  if (kStoreAc && !ac.pair_built && ac.scans > 1 && ++ac.pair_blocks == kBlocksBeforePairs) {
    ac.BuildPair();
  }
  const int skip = kStoreAc ? 0 : ac.skip_bits;
  const bool pairs = kStoreAc && ac.pair_built;
  for (int k = 1; k < DCTSIZE2;) {
    if (b.nbits < 32) Refill(s, b);
    if (pairs) {  // two coefficients a lookup, while they stay in the block
      const uint64_t pe = ac.pair[Peek(b, kPairBits)];
      const int advance = static_cast<int>((pe >> 17) & 63);
      if ((pe & 31) != 0 && k + advance <= DCTSIZE2) {
        Drop(b, static_cast<int>(pe & 31));
        block[kNaturalOrder[k + static_cast<int>((pe >> 12) & 31)]] =
            static_cast<JCOEF>(static_cast<int16_t>(pe >> 48));
        block[kNaturalOrder[k + static_cast<int>((pe >> 8) & 15)]] =
            static_cast<JCOEF>(static_cast<int16_t>(pe >> 32));
        if (pe & kPairEndsBlock) break;
        k += advance;
        continue;
      }
    }
    if (skip != 0) {  // several symbols a lookup, while they stay in the block
      const uint32_t se = skip == kWideSkipBits ? ac.skip_wide[Peek(b, kWideSkipBits)]
                                                : ac.skip[Peek(b, kSkipBits)];
      const int advance = static_cast<int>((se >> 8) & 127);
      if ((se & 31) != 0 && k + advance <= DCTSIZE2) {
        Drop(b, static_cast<int>(se & 31));
        if (se & kEndsBlock) break;
        k += advance;
        continue;
      }
    }
    e = ac.lut[Peek(b, kLook)];
    if (e & kFused) {  // most coefficients: one lookup, no branch on the symbol
      // A fused symbol takes at most kLook bits, so the 32 bits this round
      // started with hold three: the test for a refill (a branch the CPU
      // often mispredicts: -4% of a region decode with restart markers)
      // then comes once for up to three of them.
      static_assert(3 * kLook <= 32);
#pragma GCC unroll 3
      for (int fused = 1; fused <= 3; ++fused) {
        Drop(b, static_cast<int>(e & 31));
        if (kStoreAc) block[kNaturalOrder[k + FusedRun(e)]] = static_cast<JCOEF>(FusedValue(e));
        k += FusedAdvance(e);
        if (fused == 3 || k >= DCTSIZE2) break;
        e = ac.lut[Peek(b, kLook)];
        if (!(e & kFused)) break;
      }
      continue;
    }
    const int rs = Symbol(s, b, ac, e);
    const int value = ExtraBits(b, rs & 15);
    if ((rs & 15) == 0) {  // end of block, or a run of 16 zeros
      if (rs != 0xF0) break;
      k += 16;
      continue;
    }
    k += rs >> 4;
    if (kStoreAc) block[kNaturalOrder[k]] = static_cast<JCOEF>(value);
    ++k;
  }
}

// At a restart interval's end: the rest of the buffer is dropped and the
// RSTn marker is read. The expected marker right after the interval's last
// byte is taken here. Anything else goes to libjpeg's marker reader, with
// the buffer's whole unused bytes counted as discarded: it warns of them
// (an error) and resynchronizes when the marker is not the expected one.
// (libjpeg's own decoder passes over unused bytes before a marker its bit
// reader has already run into, and reports them at EOI, where the warning
// is harmless: whether a file decodes then depends on how far it had read
// ahead. Here such a file is always damaged.)
bool Restart(Scan& s) {
  j_decompress_ptr cinfo = s.cinfo;
  const int64_t real_bits = s.nbits - s.fake;
  const auto expected = static_cast<uint8_t>(JPEG_RST0 + cinfo->marker->next_restart_num);
  if (real_bits < 8 && cinfo->unread_marker == 0 && s.end - s.pos >= 2 && s.pos[0] == 0xFF &&
      s.pos[1] == expected) {
    s.pos += 2;
    cinfo->marker->next_restart_num = (cinfo->marker->next_restart_num + 1) & 7;
  } else {
    if (real_bits >= 8) cinfo->marker->discarded_bytes += static_cast<unsigned int>(real_bits / 8);
    cinfo->src->next_input_byte = s.pos;
    cinfo->src->bytes_in_buffer = static_cast<size_t>(s.end - s.pos);
    if (!(*cinfo->marker->read_restart_marker)(cinfo)) return false;
    s.pos = cinfo->src->next_input_byte;
    s.end = s.pos + cinfo->src->bytes_in_buffer;
  }
  s.buf = 0;
  s.nbits = 0;
  s.fake = 0;
  s.at_marker = false;
  std::fill(std::begin(s.last_dc), std::end(s.last_dc), 0u);
  s.restarts_to_go = cinfo->restart_interval;
  if (cinfo->unread_marker == 0) cinfo->entropy->insufficient_data = FALSE;
  return true;
}

// The MCU decoder, compiled twice: for any x86-64, and with BMI2 (shifts by
// a register without flags: the bit buffer's shift is on the critical path
// of every symbol), picked at Install.
[[gnu::always_inline]] inline boolean DecodeMcuBody(Scan& s, j_decompress_ptr cinfo,
                                                    JBLOCKROW* mcu_data) {
  if (cinfo->restart_interval != 0 && s.restarts_to_go == 0 && !Restart(s)) return FALSE;
  if (!cinfo->entropy->insufficient_data) {
    const bool store = mcu_data != nullptr && s.mcu_col >= s.first_col && s.mcu_col <= s.last_col;
    Bits b{s.buf, s.nbits, s.pos, FastLimit(s)};
    for (int blk = 0; blk < s.blocks; ++blk) {
      JCOEF* block = store ? mcu_data[blk][0] : nullptr;
      if (block != nullptr && s.ac_needed[blk]) {
        DecodeBlock<true>(s, b, blk, block);
      } else {
        DecodeBlock<false>(s, b, blk, block);
      }
    }
    s.buf = b.buf;
    s.nbits = b.nbits;
    s.pos = b.pos;
    // Bits past the end of the data were used: libjpeg's warning.
    if (s.nbits < s.fake) {
      WARNMS(cinfo, JWRN_HIT_MARKER);
      cinfo->entropy->insufficient_data = TRUE;
    }
  }
  if (cinfo->restart_interval != 0) --s.restarts_to_go;
  s.mcu_col = s.mcu_col + 1 == s.mcus_per_row ? 0 : s.mcu_col + 1;
  // After the scan's last MCU, whole bytes left in the buffer are data
  // before the next marker: counted as discarded, so that libjpeg's marker
  // reader reports them (harmless before EOI, damage before any other).
  if (--s.mcus_left == 0 && s.nbits - s.fake >= 8) {
    cinfo->marker->discarded_bytes += static_cast<unsigned int>((s.nbits - s.fake) / 8);
  }
  cinfo->src->next_input_byte = s.pos;
  cinfo->src->bytes_in_buffer = static_cast<size_t>(s.end - s.pos);
  return TRUE;
}

}  // namespace

JpegEntropyDecoder::JpegEntropyDecoder(bool eager, bool eager_wide)
    : eager_(eager), eager_wide_(eager_wide), scan_(std::make_unique<Scan>()) {}
JpegEntropyDecoder::~JpegEntropyDecoder() = default;

JpegEntropyDecoder::Table* JpegEntropyDecoder::TableFor(const JHUFF_TBL& huff, bool dc) {
  for (const std::unique_ptr<Table>& t : tables_) {
    if (t != nullptr && t->Matches(huff, dc)) {
      if (t->scan_stamp != scan_stamp_) ++t->scans;
      // Eager: the narrow skip lookups at a table's first scan, the wide
      // ones at its second, so that the tests reach both.
      if (eager_ && eager_wide_ && !dc && t->scans > 1 && t->skip_bits != kWideSkipBits) {
        t->BuildSkip<kWideSkipBits>();
      }
      t->scan_stamp = scan_stamp_;
      return t.get();
    }
  }
  // Round robin over the slots this scan does not use (at most 8 of 12).
  while (tables_[static_cast<size_t>(next_evict_)] != nullptr &&
         tables_[static_cast<size_t>(next_evict_)]->scan_stamp == scan_stamp_) {
    next_evict_ = (next_evict_ + 1) % kCachedTables;
  }
  std::unique_ptr<Table>& slot = tables_[static_cast<size_t>(next_evict_)];
  next_evict_ = (next_evict_ + 1) % kCachedTables;
  if (slot == nullptr) slot = std::make_unique<Table>();
  slot->Build(huff, dc);
  slot->scan_stamp = scan_stamp_;
  slot->scans = 1;
  if (eager_ && !dc) {
    slot->BuildSkip<kSkipBits>();
    slot->BuildPair();
  }
  return slot.get();
}

bool JpegEntropyDecoder::Install(j_decompress_ptr cinfo) {
  // The module structs of jpegint.h (the master's crop columns among them)
  // are libjpeg-turbo 2 and 3's; another libjpeg keeps its own decoder.
#if !defined(LIBJPEG_TURBO_VERSION_NUMBER) || LIBJPEG_TURBO_VERSION_NUMBER < 2000000
  return false;
#endif
  if (cinfo->progressive_mode || cinfo->arith_code || cinfo->data_precision != 8 ||
      jpeg_has_multiple_scans(cinfo) || cinfo->blocks_in_MCU > D_MAX_BLOCKS_IN_MCU ||
      cinfo->comps_in_scan > MAX_COMPS_IN_SCAN || cinfo->entropy == nullptr ||
      cinfo->entropy->insufficient_data) {
    return false;
  }
  Scan& s = *scan_;
  s = Scan{};
  ++scan_stamp_;
  s.cinfo = cinfo;
  s.blocks = cinfo->blocks_in_MCU;
  for (int b = 0; b < s.blocks; ++b) {
    const int ci = cinfo->MCU_membership[b];
    const jpeg_component_info* comp = cinfo->cur_comp_info[ci];
    const JHUFF_TBL* dc = cinfo->dc_huff_tbl_ptrs[comp->dc_tbl_no];
    const JHUFF_TBL* ac = cinfo->ac_huff_tbl_ptrs[comp->ac_tbl_no];
    if (dc == nullptr || ac == nullptr) return false;  // libjpeg refused this at start
    s.component[b] = ci;
    s.dc[b] = TableFor(*dc, true);
    s.ac[b] = TableFor(*ac, false);
    s.ac_needed[b] = comp->component_needed && comp->DCT_scaled_size > 1;
  }
  s.pos = cinfo->src->next_input_byte;
  s.end = s.pos + cinfo->src->bytes_in_buffer;
  s.restarts_to_go = cinfo->restart_interval;
  s.mcus_per_row = cinfo->MCUs_per_row;
  s.mcus_left = uint64_t{cinfo->MCUs_per_row} * cinfo->MCU_rows_in_scan;
  s.first_col = cinfo->master->first_iMCU_col;
  s.last_col = cinfo->master->last_iMCU_col;
  cinfo->client_data = this;
#if defined(__x86_64__)
  cinfo->entropy->decode_mcu = __builtin_cpu_supports("bmi2") ? &JpegEntropyDecoder::DecodeMcuBmi2
                                                              : &JpegEntropyDecoder::DecodeMcu;
#else
  cinfo->entropy->decode_mcu = &JpegEntropyDecoder::DecodeMcu;
#endif
  return true;
}

boolean JpegEntropyDecoder::DecodeMcu(j_decompress_ptr cinfo, JBLOCKROW* mcu_data) {
  return DecodeMcuBody(*static_cast<JpegEntropyDecoder*>(cinfo->client_data)->scan_, cinfo,
                       mcu_data);
}

#if defined(__x86_64__)
[[gnu::target("bmi2")]] boolean JpegEntropyDecoder::DecodeMcuBmi2(j_decompress_ptr cinfo,
                                                                   JBLOCKROW* mcu_data) {
  return DecodeMcuBody(*static_cast<JpegEntropyDecoder*>(cinfo->client_data)->scan_, cinfo,
                       mcu_data);
}
#endif

}  // namespace shardpack::codec
