// Image bytes: recognise PNG / JPEG / WebP, decode to 8-bit RGB, encode RGB to any of them (libpng, libjpeg,
// libwebp), and strict base64. Pure functions of their inputs; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "util/status.h"

namespace mmirage::process::image_gen {

enum class ImageFormat { kUnknown, kPng, kJpeg, kWebp };

// From the leading magic bytes.
ImageFormat SniffImageFormat(std::string_view bytes);
// "png" | "jpeg" | "jpg" | "webp" (case-insensitive) → the format; kUnknown otherwise.
ImageFormat ImageFormatFromName(std::string_view name);
const char* ImageFormatName(ImageFormat f);  // "png", "jpeg", "webp", "unknown"

struct RgbImage {
  int width = 0;
  int height = 0;
  std::string pixels;  // width * height * 3 bytes, row-major RGB
};

// Errors: kCorruption with the library's reason (unknown format, truncated or invalid data).
Result<RgbImage> DecodeImage(std::string_view bytes);
// JPEG quality 95, WebP quality 90 (lossy), PNG lossless. Errors: kInvalidArgument (kUnknown format), kInternal.
Result<std::string> EncodeImage(const RgbImage& image, ImageFormat format);

}  // namespace mmirage::process::image_gen
