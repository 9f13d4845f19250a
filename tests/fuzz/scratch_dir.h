// ScratchDir: a private folder for one fuzz process, removed when the process exits.
//
// The config parsers read files (LoadConfig, LoadTiers), so the targets that fuzz them write
// each input to a file first: slower than a string entry point, but it fuzzes the very path
// `bulkhead run --config` takes, file reading included. Under /dev/shm when it exists, so the
// writes stay in memory. One fuzz process is one thread: no locking.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace bulkhead::fuzz {

class ScratchDir {
 public:
  ScratchDir() {
    std::string base = std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
    std::string pattern = base + "/bulkhead-fuzz-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) {
      std::perror("bulkhead fuzz: mkdtemp");
      std::abort();
    }
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

  // Replaces the file's contents with `bytes`; aborts if it cannot (a broken harness, not a
  // finding).
  static void Write(const std::filesystem::path& file, std::string_view bytes) {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out.flush()) {
      std::fprintf(stderr, "bulkhead fuzz: cannot write %s\n", file.c_str());
      std::abort();
    }
  }

 private:
  std::filesystem::path path_;
};

}  // namespace bulkhead::fuzz
