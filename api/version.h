#pragma once
#ifndef FLEXPLANE_VERSION
#define FLEXPLANE_VERSION "0.1.0"
#endif
#ifndef FLEXPLANE_GIT_COMMIT
#define FLEXPLANE_GIT_COMMIT "unknown"
#endif
