// Catch2 main for proto_tests (the protocol core's own test binary).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
