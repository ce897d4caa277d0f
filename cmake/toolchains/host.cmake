# The build machine itself: CMake's usual compiler detection (cc/c++, or CC/CXX, or
# -DCMAKE_<LANG>_COMPILER=clang++ for the fuzzer). Nothing is cross-compiled, so there
# are no CPU flags and no find-root modes to set. The file exists so every toolchain is
# named and fingerprinted the same way.
