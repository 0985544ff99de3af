// EAL start-up shared by flexplane-router, its tests and its benchmark.
#pragma once

#include <rte_eal.h>

#include <fstream>
#include <string>
#include <vector>

namespace flexplane::router {

// Free 2 MiB hugepages (0 when none are reserved).
inline long hugepages_free() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line))  // "HugePages_Free:     512" (other lines end in "kB")
    if (line.rfind("HugePages_Free:", 0) == 0) return std::stol(line.substr(15));
  return 0;
}

// rte_eal_init on `args` (args[0] is the program name); < 0 on failure
// (rte_errno says why). EAL may keep pointers into the strings: they must
// outlive the process's use of DPDK.
inline int eal_init(std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  return rte_eal_init(static_cast<int>(args.size()), argv.data());
}

}  // namespace flexplane::router
