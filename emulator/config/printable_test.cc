// printable(): what messages quote from inputs cannot drive the terminal.
#include "emulator/config/printable.h"

#include <catch2/catch.hpp>

#include "api/params.h"

using flexplane::printable;

TEST_CASE("printable escapes control bytes and invalid UTF-8, keeps text", "[config]") {
  CHECK(printable("routers.tor: 'red'") == "routers.tor: 'red'");
  CHECK(printable("\x1b[2Jx") == "\\e[2Jx");
  CHECK(printable("a\tb\nc\rd\x7f") == "a\\tb\\nc\\rd\\x7f");
  CHECK(printable(std::string("\x01\x00", 2)) == "\\x01\\x00");
  CHECK(printable("\xc3\xa9 \xc2\xb5s") == "\xc3\xa9 \xc2\xb5s");  // é µs: valid UTF-8 stays
  CHECK(printable("\xc2\x9b" "31m") == "\\xc2\\x9b31m");            // U+009B: the 8-bit CSI
  CHECK(printable("\xff\xc3") == "\\xff\\xc3");                     // invalid, truncated sequence
  CHECK(printable("\xe0\x80\xaf") == "\\xe0\\x80\\xaf");            // overlong
}

TEST_CASE("ConfigError keeps a NUL from an input visible", "[config]") {
  const flexplane::ConfigError e(std::string("t.csv:2: src 'a\0b' is bad", 25));
  CHECK(std::string(e.what()) == "t.csv:2: src 'a\\0b' is bad");
}
