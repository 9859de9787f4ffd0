// The decoder helper's handlers: the code that parses and renders outside bytes (poppler,
// Leptonica with libtiff/libpng/libjpeg, OpenCV, Tesseract, libarchive, GMime), one handler per
// request kind, and what they load before the sandbox is installed. `ingestd decoder` serves
// them (app/main.cpp); tests' helpers serve them beside kinds of their own.
#pragma once

#include "adapters/sandbox/helper.hpp"

namespace ingestd::sandbox {

/// transcribe_page, preprocess_page, unpack and render_page, and their warm-up: Tesseract with
/// the settings' languages, GMime, OpenCV's out-of-memory hook.
handler_table decoder_handlers();

/// `<program> decoder [options]`: parses the options (argv[first]...) and runs helper_main with
/// decoder_handlers() and `extra` kinds (tests'). Returns the exit code.
int decoder_main(int argc, char** argv, int first, const std::map<uint8_t, handler>& extra = {});

} // namespace ingestd::sandbox
