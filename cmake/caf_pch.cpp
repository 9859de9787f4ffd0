// Compiles the shared CAF precompiled header once; see ingestd_caf_pch in the top CMakeLists.txt.
