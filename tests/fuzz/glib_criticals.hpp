// The fuzz targets of the readers built on GLib (GMime, libgsf): a GLib critical is a library
// refusing a call (a g_return_if_fail check), a misuse of its API by the unpacker, so it aborts
// like a failed check (GLib's own fatal criticals stop with a breakpoint trap, which libFuzzer
// does not catch). A library that reports damaged input with criticals of its own domain (libgsf's
// OLE2 reader: "libgsf:msole: ... assertion 'block < ole->info->max_block' failed", then no file)
// names that domain: those are a property of the input and only logged.
#pragma once

#include <glib.h>

#include <cstdio>
#include <cstdlib>

namespace ingestd::fuzz {

/// Installs the handler once; `input_domain` (a domain prefix, may be null) is the library's own.
inline bool abort_on_glib_criticals(const char* input_domain) {
  static const char* input = input_domain;
  g_log_set_default_handler(
      [](const gchar* domain, GLogLevelFlags level, const gchar* message, gpointer) {
        bool from_input = input != nullptr && domain != nullptr && g_str_has_prefix(domain, input);
        if ((level & (G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL)) != 0 && !from_input) {
          std::fprintf(stderr, "%s: %s\n", domain != nullptr ? domain : "GLib", message);
          std::abort();
        }
        g_log_default_handler(domain, level, message, nullptr);
      },
      nullptr);
  return true;
}

} // namespace ingestd::fuzz
