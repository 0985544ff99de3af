#pragma once
#ifndef FLEXPLANE_VERSION
#define FLEXPLANE_VERSION "0.1.0"
#endif
// The build writes the commit (flexplane_git_commit.h, CMakeLists.txt);
// "unknown" where it could not (no git checkout, another build system).
#if __has_include("flexplane_git_commit.h")
#include "flexplane_git_commit.h"
#endif
#ifndef FLEXPLANE_GIT_COMMIT
#define FLEXPLANE_GIT_COMMIT "unknown"
#endif
