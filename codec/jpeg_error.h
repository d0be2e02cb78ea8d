// libjpeg's error handling for every libjpeg user (codec/jpeg_decoder.cc,
// codec/jpeg_restart.cc, datasets/demo.cc's CMYK encoder): errors and
// damaging warnings never abort the process or print; they longjmp back to
// the setjmp of the libjpeg call that is running, with libjpeg's message
// kept. IsBenignJpegWarning also serves TurboJPEG's callers
// (codec/transcode.cc).
//
// Functions that call setjmp must be kept free of C++ objects with
// destructors: a longjmp passes over them.
#ifndef SHARDPACK_CODEC_JPEG_ERROR_H_
#define SHARDPACK_CODEC_JPEG_ERROR_H_

#include <setjmp.h>
#include <stdio.h>  // jpeglib.h needs FILE

#include <string_view>

#include <jpeglib.h>

namespace shardpack::codec {

// libjpeg warnings that leave a complete, correct image: trailing bytes
// before EOI (common in camera and ImageNet files), an unknown JFIF minor
// version, a JFIF thumbnail whose size does not match, and an Adobe marker
// whose color transform code is not one for the component count (libjpeg
// then assumes YCbCr or YCCK, as PIL's decode does). Every other
// warning (premature end of data, bad Huffman code, ...) means the pixels
// are damaged.
bool IsBenignJpegWarning(std::string_view message);

// libjpeg's error manager with a way back. `pub` comes first: libjpeg sees
// a jpeg_error_mgr.
struct JpegErrorManager {
  jpeg_error_mgr pub;
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

// error_exit: keeps the message and longjmps.
[[noreturn]] inline void JpegErrorExit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  longjmp(err->jump, 1);
}

// emit_message: level -1 is a warning: benign ones (IsBenignJpegWarning) are
// counted and ignored, the rest mean damaged pixels and end the call like an
// error. Trace messages (level >= 0) are dropped; nothing is ever printed.
inline void JpegEmitMessage(j_common_ptr cinfo, int level) {
  if (level >= 0) return;
  auto* err = reinterpret_cast<JpegErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  ++cinfo->err->num_warnings;
  if (!IsBenignJpegWarning(err->message)) longjmp(err->jump, 1);
}

// Points `cinfo` (a compress or decompress struct, before its create call)
// at `err`, set up as above.
template <typename CInfo>
void UseJpegErrorManager(CInfo* cinfo, JpegErrorManager* err) {
  cinfo->err = jpeg_std_error(&err->pub);
  err->pub.error_exit = JpegErrorExit;
  err->pub.emit_message = JpegEmitMessage;
  err->message[0] = '\0';
}

}  // namespace shardpack::codec

#endif  // SHARDPACK_CODEC_JPEG_ERROR_H_
