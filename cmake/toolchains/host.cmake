# The build machine itself: CMake's usual compiler detection (cc/c++ from PATH; CC/CXX or
# -DCMAKE_<LANG>_COMPILER=clang++ when CMake is run by hand, e.g. for the fuzzer — the
# pipeline's runtime stage drops CC/CXX). Nothing is cross-compiled, so there are no CPU
# flags and no find-root modes to set. The file exists so every toolchain is named and
# fingerprinted the same way.
