// Ends what target_avx512_begin.h or target_avx2_begin.h began: the code after it is compiled
// for the build's own -march again.
#ifdef __clang__
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
