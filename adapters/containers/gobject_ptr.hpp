// GLib's objects and strings held by C++ scopes, for the readers built on GLib libraries (GMime,
// libgsf).
#pragma once

#include <glib-object.h>

#include <string>

namespace ingestd {

/// Owns one reference of a GObject.
template <class T>
struct gobject_ptr {
  T* p = nullptr;
  explicit gobject_ptr(T* x) : p(x) {}
  gobject_ptr(const gobject_ptr&) = delete;
  gobject_ptr& operator=(const gobject_ptr&) = delete;
  ~gobject_ptr() {
    if (p != nullptr)
      g_object_unref(p);
  }
};

/// A string GLib allocated, freed with g_free.
inline std::string take_gstring(char* s) {
  if (s == nullptr)
    return {};
  std::string out{s};
  g_free(s);
  return out;
}

} // namespace ingestd
