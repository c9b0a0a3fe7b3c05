#include "process/image_gen/image_codec.h"

#include <png.h>
#include <webp/decode.h>
#include <webp/encode.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <vector>

// libjpeg's header needs <cstdio> first.
#include <jpeglib.h>

namespace mmirage::process::image_gen {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

struct JpegError {
  jpeg_error_mgr mgr;
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void JpegErrorExit(j_common_ptr cinfo) {
  auto* e = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, e->message);
  std::longjmp(e->jump, 1);
}

void JpegSilence(j_common_ptr, int) {}

Result<RgbImage> DecodePng(std::string_view bytes) {
  png_image img;
  std::memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&img, bytes.data(), bytes.size()))
    return Status::Corruption(std::string("invalid PNG: ") + img.message);
  img.format = PNG_FORMAT_RGB;
  RgbImage out;
  out.width = static_cast<int>(img.width);
  out.height = static_cast<int>(img.height);
  out.pixels.resize(PNG_IMAGE_SIZE(img));
  if (!png_image_finish_read(&img, nullptr, out.pixels.data(), 0, nullptr)) {
    std::string msg = img.message;
    png_image_free(&img);
    return Status::Corruption("invalid PNG: " + msg);
  }
  return out;
}

Result<RgbImage> DecodeJpeg(std::string_view bytes) {
  jpeg_decompress_struct cinfo;
  JpegError err;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = JpegErrorExit;
  err.mgr.emit_message = JpegSilence;
  RgbImage out;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return Status::Corruption(std::string("invalid JPEG: ") + err.message);
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&cinfo, TRUE);
  cinfo.out_color_space = JCS_RGB;
  jpeg_start_decompress(&cinfo);
  out.width = static_cast<int>(cinfo.output_width);
  out.height = static_cast<int>(cinfo.output_height);
  out.pixels.resize(static_cast<size_t>(out.width) * out.height * 3);
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = reinterpret_cast<JSAMPROW>(&out.pixels[static_cast<size_t>(cinfo.output_scanline) * out.width * 3]);
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return out;
}

Result<RgbImage> DecodeWebp(std::string_view bytes) {
  int w = 0, h = 0;
  uint8_t* px = WebPDecodeRGB(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), &w, &h);
  if (px == nullptr) return Status::Corruption("invalid WebP data");
  RgbImage out;
  out.width = w;
  out.height = h;
  out.pixels.assign(reinterpret_cast<const char*>(px), static_cast<size_t>(w) * h * 3);
  WebPFree(px);
  return out;
}

Result<std::string> EncodePng(const RgbImage& im) {
  png_image img;
  std::memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  img.width = static_cast<png_uint_32>(im.width);
  img.height = static_cast<png_uint_32>(im.height);
  img.format = PNG_FORMAT_RGB;
  png_alloc_size_t size = 0;
  if (!png_image_write_to_memory(&img, nullptr, &size, 0, im.pixels.data(), 0, nullptr))
    return Status::Internal(std::string("PNG encoding failed: ") + img.message);
  std::string out(size, '\0');
  if (!png_image_write_to_memory(&img, out.data(), &size, 0, im.pixels.data(), 0, nullptr))
    return Status::Internal(std::string("PNG encoding failed: ") + img.message);
  out.resize(size);
  return out;
}

Result<std::string> EncodeJpeg(const RgbImage& im) {
  jpeg_compress_struct cinfo;
  JpegError err;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = JpegErrorExit;
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  if (setjmp(err.jump)) {
    jpeg_destroy_compress(&cinfo);
    if (buf) free(buf);
    return Status::Internal(std::string("JPEG encoding failed: ") + err.message);
  }
  jpeg_create_compress(&cinfo);
  jpeg_mem_dest(&cinfo, &buf, &size);
  cinfo.image_width = static_cast<JDIMENSION>(im.width);
  cinfo.image_height = static_cast<JDIMENSION>(im.height);
  cinfo.input_components = 3;
  cinfo.in_color_space = JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, 95, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(
        reinterpret_cast<const unsigned char*>(&im.pixels[static_cast<size_t>(cinfo.next_scanline) * im.width * 3]));
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  std::string out(reinterpret_cast<const char*>(buf), size);
  jpeg_destroy_compress(&cinfo);
  free(buf);
  return out;
}

Result<std::string> EncodeWebp(const RgbImage& im) {
  uint8_t* out = nullptr;
  size_t n =
      WebPEncodeRGB(reinterpret_cast<const uint8_t*>(im.pixels.data()), im.width, im.height, im.width * 3, 90.0f, &out);
  if (n == 0 || out == nullptr) return Status::Internal("WebP encoding failed");
  std::string s(reinterpret_cast<const char*>(out), n);
  WebPFree(out);
  return s;
}

}  // namespace

ImageFormat SniffImageFormat(std::string_view b) {
  if (b.size() >= 8 && std::memcmp(b.data(), "\x89PNG\r\n\x1a\n", 8) == 0) return ImageFormat::kPng;
  if (b.size() >= 3 && static_cast<unsigned char>(b[0]) == 0xFF && static_cast<unsigned char>(b[1]) == 0xD8 &&
      static_cast<unsigned char>(b[2]) == 0xFF)
    return ImageFormat::kJpeg;
  if (b.size() >= 12 && std::memcmp(b.data(), "RIFF", 4) == 0 && std::memcmp(b.data() + 8, "WEBP", 4) == 0)
    return ImageFormat::kWebp;
  return ImageFormat::kUnknown;
}

ImageFormat ImageFormatFromName(std::string_view name) {
  std::string n = Lower(name);
  if (n == "png") return ImageFormat::kPng;
  if (n == "jpeg" || n == "jpg") return ImageFormat::kJpeg;
  if (n == "webp") return ImageFormat::kWebp;
  return ImageFormat::kUnknown;
}

const char* ImageFormatName(ImageFormat f) {
  switch (f) {
    case ImageFormat::kPng: return "png";
    case ImageFormat::kJpeg: return "jpeg";
    case ImageFormat::kWebp: return "webp";
    case ImageFormat::kUnknown: break;
  }
  return "unknown";
}

Result<RgbImage> DecodeImage(std::string_view bytes) {
  switch (SniffImageFormat(bytes)) {
    case ImageFormat::kPng: return DecodePng(bytes);
    case ImageFormat::kJpeg: return DecodeJpeg(bytes);
    case ImageFormat::kWebp: return DecodeWebp(bytes);
    case ImageFormat::kUnknown: break;
  }
  return Status::Corruption("not a PNG, JPEG or WebP image");
}

Result<std::string> EncodeImage(const RgbImage& image, ImageFormat format) {
  if (image.width <= 0 || image.height <= 0 ||
      image.pixels.size() != static_cast<size_t>(image.width) * image.height * 3)
    return Status::InvalidArgument("bad RGB image dimensions");
  switch (format) {
    case ImageFormat::kPng: return EncodePng(image);
    case ImageFormat::kJpeg: return EncodeJpeg(image);
    case ImageFormat::kWebp: return EncodeWebp(image);
    case ImageFormat::kUnknown: break;
  }
  return Status::InvalidArgument("unknown image format");
}

}  // namespace mmirage::process::image_gen
