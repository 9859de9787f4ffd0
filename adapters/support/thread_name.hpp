// Names the calling thread as `top -H`, `ps -L` and debuggers show it (at most 15 characters).
#pragma once

#include <pthread.h>

namespace ingestd {

inline void name_this_thread(const char* name) {
  pthread_setname_np(pthread_self(), name);
}

} // namespace ingestd
