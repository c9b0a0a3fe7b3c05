// Image inputs of a model output: which images a row sends, in which order, and where in the user turn.
// Placement: the row's image variables (inputs with `type: image`, and computed image_gen outputs) whose value is
// not null, in variable name order; a prompt naming one (`{{ image_var }}`) puts the image exactly there (each
// occurrence is one image); the others go at the start of the user turn, one per line, in name order; never after
// the assistant prefix. The renderer writes an ImagePlaceholder per image variable; PlaceImages turns them into
// engine::kImageMarker and builds the image list in marker order. Image values: an absolute path, an http(s) URL,
// a `data:` URI, image file bytes, or an HF Image struct {"bytes", "path"} (bytes win; base64 text accepted).
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "data/value.h"
#include "engine/engine.h"
#include "util/status.h"

namespace mmirage::process::llm {

// The image variables of `config` (inputs with type: image, and image_gen outputs), sorted by name, without
// duplicates.
std::vector<std::string> ImageVariableNames(const config::Config& config);

// What the prompt renderer writes for image variable `name` (a marker that no template produces by chance).
std::string ImagePlaceholder(const std::string& name);

// `vars` with each present, non-null image variable of `image_names` replaced by its placeholder (for rendering
// prompts). Returns `vars` itself when there is nothing to replace.
Value WithImagePlaceholders(const Value& vars, const std::vector<std::string>& image_names);

struct PlacedImages {
  std::string prompt;                      // placeholders replaced by engine::kImageMarker; unplaced ones first
  std::vector<engine::ImageInput> images;  // one per marker, in order
  std::vector<std::string> variables;      // the image variable of each image
};

// Applies the placement rule to a prompt rendered from WithImagePlaceholders(vars, image_names). Errors
// (kInvalidArgument, naming the variable): an image value of an unusable kind (a list, a number, a struct
// without bytes or path), a malformed data: URI or base64 text.
Result<PlacedImages> PlaceImages(std::string prompt, const Value& vars, const std::vector<std::string>& image_names);

// One image value as an engine image. Errors as for PlaceImages.
Result<engine::ImageInput> ToImageInput(const std::string& name, const Value& value);

// Width and height of PNG, GIF, BMP and JPEG bytes from their headers (no decoding); {0, 0} when unknown.
struct ImageSize {
  int width = 0;
  int height = 0;
};
ImageSize SniffImageSize(std::string_view bytes);

// `data:[<mime>][;base64],<payload>` → the payload bytes (percent-decoded when not base64). kInvalidArgument
// when malformed.
Result<std::string> DecodeDataUri(std::string_view uri);

}  // namespace mmirage::process::llm
