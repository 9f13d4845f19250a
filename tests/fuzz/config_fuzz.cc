// config_fuzz: the node config file (LoadConfig) on arbitrary bytes.
//
// Each input becomes the node's config file in a scratch folder that also holds a valid
// tiers/default.json, and is read by LoadConfig, as `bulkhead run --config` reads it. On every
// input the parser's contract must hold, or the target aborts (a finding):
// - it returns; it throws nothing (config.h: nothing but std::bad_alloc);
// - a refusal names a file and gives a reason, in one line (an operator reads it in a log);
// - an accepted config is one its own checks accept: the node options and every tier pass
//   Validate(), and the node serves at least one tier.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <variant>

#include "config.h"
#include "scratch_dir.h"

namespace {

void Fail(const char* what) {
  std::fprintf(stderr, "config_fuzz: contract broken: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Made once; removed by its destructor when libFuzzer exits.
  static const bulkhead::fuzz::ScratchDir scratch;
  static const bool tiers_written = [] {
    std::filesystem::create_directory(scratch.path() / "tiers");
    bulkhead::fuzz::ScratchDir::Write(scratch.path() / "tiers" / "default.json",
                                      R"({"workers": 4, "channel_share": 0.5})");
    return true;
  }();
  (void)tiers_written;
  const auto file = scratch.path() / "node.json";
  bulkhead::fuzz::ScratchDir::Write(file,
                                    std::string_view(reinterpret_cast<const char*>(data), size));

  auto loaded = bulkhead::LoadConfig(file);
  if (const auto* error = std::get_if<bulkhead::ConfigError>(&loaded)) {
    if (error->file.empty()) Fail("a refusal without a file");
    if (error->reason.empty()) Fail("a refusal without a reason");
    if (error->Message().find('\n') != std::string::npos) Fail("a refusal over two lines");
    return 0;
  }
  const auto& config = std::get<bulkhead::Config>(loaded);
  if (config.node.Validate()) Fail("accepted node options that Validate() refuses");
  if (config.tiers.empty()) Fail("accepted a config that serves no tier");
  for (const auto& tier : config.tiers) {
    if (tier.Validate()) Fail("accepted a tier that Validate() refuses");
  }
  return 0;
}
