// The version of Zeus: the one place it is written. CMake's project version
// and the Python package's version are read from this line.

#ifndef ZEUS_VERSION_H_
#define ZEUS_VERSION_H_

#define ZEUS_VERSION "0.1.0"

#endif  // ZEUS_VERSION_H_
