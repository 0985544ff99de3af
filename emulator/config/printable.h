// Text from inputs made safe to print. Error messages quote what the user
// wrote (a YAML key, a trace cell, a file name); a byte that drives the
// terminal (ESC sequences, other C0/C1 controls, invalid UTF-8) is shown as an
// escape instead, so a message can neither hide itself nor repaint the screen.
// Every message the emulator prints passes through here once, at the point
// where it is printed (exit_status_of, warnings), so no formatting site can
// forget it.
#pragma once

#include <string>
#include <string_view>

namespace flexplane {

// "\x1b[2J" -> "\\e[2J"; "\t" -> "\\t"; valid UTF-8 (é, µ) is kept.
std::string printable(std::string_view text);

}  // namespace flexplane
