// tier_fuzz: a tier file (LoadTiers) on arbitrary bytes.
//
// Each input becomes `<scratch>/tiers/fuzzed.json` and is read by LoadTiers for tier "fuzzed",
// as a node reads its tiers at start and on SIGHUP. On every input the parser's contract must
// hold, or the target aborts (a finding):
// - it returns; it throws nothing (config.h: nothing but std::bad_alloc);
// - a refusal names the tier file and gives a reason, in one line;
// - an accepted tier is exactly one, named "fuzzed", that passes Validate(), and its retry
//   schedule builds a RetryPolicy (whose constructor throws on what Validate() should refuse).
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <variant>
#include <vector>

#include "config.h"
#include "retry_policy.h"
#include "scratch_dir.h"

namespace {

void Fail(const char* what) {
  std::fprintf(stderr, "tier_fuzz: contract broken: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Made once; removed by its destructor when libFuzzer exits.
  static const bulkhead::fuzz::ScratchDir scratch;
  static const std::filesystem::path dir = [] {
    std::filesystem::create_directory(scratch.path() / "tiers");
    return scratch.path() / "tiers";
  }();
  const auto file = dir / "fuzzed.json";
  bulkhead::fuzz::ScratchDir::Write(file,
                                    std::string_view(reinterpret_cast<const char*>(data), size));

  auto loaded = bulkhead::LoadTiers(dir, {"fuzzed"});
  if (const auto* error = std::get_if<bulkhead::ConfigError>(&loaded)) {
    if (error->file != file.string()) Fail("a refusal that names another file");
    if (error->reason.empty()) Fail("a refusal without a reason");
    if (error->Message().find('\n') != std::string::npos) Fail("a refusal over two lines");
    return 0;
  }
  const auto& tiers = std::get<std::vector<bulkhead::TierOptions>>(loaded);
  if (tiers.size() != 1 || tiers[0].name != "fuzzed") Fail("accepted another tier than asked");
  const bulkhead::TierOptions& tier = tiers[0];
  if (tier.Validate()) Fail("accepted a tier that Validate() refuses");
  std::vector<std::chrono::milliseconds> delays;
  for (int64_t ms : tier.retry_delays_ms) delays.emplace_back(ms);
  try {
    bulkhead::RetryPolicy policy(delays, tier.retry_jitter);
    (void)policy.NextDelay(1, 0.999);
  } catch (const std::exception&) {
    Fail("accepted a retry schedule RetryPolicy refuses");
  }
  return 0;
}
