// Compiles the shared GoogleTest precompiled header once; see ingestd_gtest_pch in the top
// CMakeLists.txt.
