// Reading a whole file the user named (--config, --resume, a corpus file) without library
// exceptions: a stream that fails mid-read (a /proc file, a device) throws from inside
// libstdc++ whatever its exception mask, so the bytes are read with read(2) instead.
#pragma once

#include <optional>
#include <string>

namespace paralab {

// The file's bytes, or nothing with `why` set to the system's reason ("Input/output error"), or
// to "not a regular file": a device or a pipe could be read forever (/dev/zero) or wait for a
// writer, so only regular files are read.
std::optional<std::string> readWholeFile(const std::string& path, std::string& why);

}  // namespace paralab
