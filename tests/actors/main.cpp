// The runner of every CAF actor test suite (CAF's unit test framework): the suites are the other
// files of tests/actors/*/, linked into one executable; `actors -s '^job$'` runs one suite.
#include "caf/test/unit_test_impl.hpp"
