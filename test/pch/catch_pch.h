// The precompiled header of the multi-file Catch2 test executables
// (test/meson.build, test_pch): Debian's Catch2 v2 single header, which every
// test file includes, parsed once per executable instead of once per file
// (about 1.5 CPU-s a file on the 2-core dev VM).
// No #pragma once: meson compiles this file as a main file (g++ warns there);
// catch.hpp has its own include guard.
#include <catch2/catch.hpp>
