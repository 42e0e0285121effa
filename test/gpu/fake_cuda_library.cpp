// A tiny shared library for library_search_test: copied into fabricated
// toolkit / wheel directories under CUDA library names to prove they are found.
extern "C" int kern_fake_cuda_library() { return 42; }
