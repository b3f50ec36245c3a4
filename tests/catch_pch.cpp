// Nothing of its own: the target vnfs_test_pch exists to precompile Catch2's header once per
// build for every test executable (tests/CMakeLists.txt).
