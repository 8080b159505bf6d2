// Whole-file helpers.

#ifndef ZEUS_UTIL_FILE_H_
#define ZEUS_UTIL_FILE_H_

#include <string>
#include <string_view>

#include "zeus/status.h"

namespace zeus {

// Reads a whole file into a string. kNotFound when it does not exist,
// kPermissionDenied when unreadable for permissions, kInvalidArgument for a
// directory, kIoError otherwise.
StatusOr<std::string> ReadFileToString(const std::string& path);

// Writes `contents` to `path` atomically, so a reader never sees a
// half-written file: a temporary of this call's own in the same directory
// (created O_CREAT|O_EXCL|O_NOFOLLOW: never a file or symlink someone put
// there, never another writer's), fsynced, then renamed onto `path`.
// Concurrent writers of one path each succeed; the last rename wins.
// kInvalidArgument for a path ending in '/'; kIoError naming the file for
// any failure (the temporary is removed).
Status WriteFileAtomically(const std::string& path, std::string_view contents);

// The directory holding this process's executable (/proc/self/exe), e.g.
// "/usr/local/bin". kNotFound when the link cannot be read.
StatusOr<std::string> ExecutableDir();

}  // namespace zeus

#endif  // ZEUS_UTIL_FILE_H_
