#include "tenant_command.h"

#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <variant>
#include <vector>

#include "admin_channel_store.h"
#include "cli_common.h"
#include "exit_codes.h"

namespace bulkhead {
namespace {

constexpr const char* kTenantNote =
    "TENANT is a tenant's name, or its id (bulkhead.tenants.id) when no tenant has that name;\n"
    "after `--` a word is TENANT or TIER even if it starts with '-'.\n";

using cli::Deliveries;
using cli::OneLine;
using cli::Subcommand;
using cli::UsageError;

// `bulkhead tenant` and its table of subcommands (defined after the handlers).
const cli::SubcommandVerb& Verb();

// The outcome line of a set-tier that found the tenant.
std::string DescribeMove(const TierMove& move, const std::string& tier) {
  const int64_t moved = move.available + move.parked;
  const std::string counts = Deliveries(moved, "waiting") + " moved (" +
                             std::to_string(move.available) + " available, " +
                             std::to_string(move.parked) + " parked)";
  std::string line = "tenant " + OneLine(move.tenant) + ": ";
  if (move.before == tier) {
    line += "already on tier " + tier;
    // The statement still moves a waiting job left in another queue (an enqueue that read the
    // tenant's old tier while an earlier set-tier ran): say so rather than "0 moved".
    line += moved == 0 ? ", 0 waiting deliveries moved" : "; " + counts + " to its queue";
    return line;
  }
  line += "tier " + OneLine(move.before) + " → " + tier + "; " + counts +
          "; deliveries in flight finish in " + OneLine(move.before);
  return line;
}

int RunSetTier(const Subcommand& sub, std::span<const std::string_view> args) {
  const std::string command = Verb().CommandName(sub);
  auto parsed = cli::Parse(command, args, {.options = {}, .max_positional = 2},
                           [&] { Verb().PrintHelp(sub); });
  if (const int* exit_code = std::get_if<int>(&parsed)) return *exit_code;
  const cli::Words& words = std::get<cli::Words>(parsed);
  if (words.positional.empty()) return UsageError(command, "missing TENANT and TIER");
  if (words.positional.size() == 1) return UsageError(command, "missing TIER");
  const std::string tenant(words.positional[0]);
  const std::string tier(words.positional[1]);
  if (!IsTierName(tier)) {
    return UsageError(command,
                      "TIER must be a tier name (a lowercase letter, then up to 62 lowercase "
                      "letters, digits or '_'), not '" +
                          OneLine(tier) + "'");
  }
  return cli::WithStore<AdminChannelStore>(command, words, [&](AdminChannelStore& store) {
    std::optional<TierMove> move;
    try {
      move = store.SetTenantTier(tenant, tier);
    } catch (const pqxx::foreign_key_violation&) {
      // tenants.tier references bulkhead.tiers: the statement changed nothing.
      std::cerr << command << ": no tier named '" << tier << "' (see bulkhead.tiers)\n";
      return kExitFailure;
    }
    if (!move) {
      std::cerr << command << ": no tenant named or numbered '" << OneLine(tenant) << "'\n";
      return kExitFailure;
    }
    std::cout << DescribeMove(*move, tier) << "\n";
    return kExitOk;
  });
}

int RunAdd(const Subcommand& sub, std::span<const std::string_view> args) {
  const std::string command = Verb().CommandName(sub);
  auto parsed = cli::Parse(
      command, args, {.options = {{"--name", "a name"}, {"--tier", "a tier"}}, .max_positional = 0},
      [&] { Verb().PrintHelp(sub); });
  if (const int* exit_code = std::get_if<int>(&parsed)) return *exit_code;
  const cli::Words& words = std::get<cli::Words>(parsed);
  std::optional<std::string> name = words.Value("--name");
  std::string tier = words.Value("--tier").value_or("default");
  if (!name) return UsageError(command, "missing --name NAME");
  if (name->empty() || name->size() > 200) {
    return UsageError(command, "--name must be 1 to 200 characters");
  }
  if (!IsTierName(tier)) {
    return UsageError(command,
                      "--tier must be a tier name (a lowercase letter, then up to 62 lowercase "
                      "letters, digits or '_'), not '" +
                          OneLine(tier) + "'");
  }
  return cli::WithStore<AdminChannelStore>(command, words, [&](AdminChannelStore& store) {
    try {
      int64_t id = store.AddTenant(*name, tier);
      std::cout << "tenant " << OneLine(*name) << " added with id " << id << " on tier " << tier
                << "\n";
      return kExitOk;
    } catch (const pqxx::foreign_key_violation&) {
      std::cerr << command << ": no tier named '" << tier << "' (see bulkhead.tiers)\n";
    } catch (const pqxx::unique_violation&) {
      std::cerr << command << ": a tenant named '" << OneLine(*name) << "' exists already\n";
    }
    return kExitFailure;
  });
}

int RunShow(const Subcommand& sub, std::span<const std::string_view> args) {
  const std::string command = Verb().CommandName(sub);
  auto parsed = cli::Parse(command, args, {.options = {cli::kJsonFlag}, .max_positional = 1},
                           [&] { Verb().PrintHelp(sub); });
  if (const int* exit_code = std::get_if<int>(&parsed)) return *exit_code;
  const cli::Words& words = std::get<cli::Words>(parsed);
  if (words.positional.empty()) return UsageError(command, "missing TENANT");
  const std::string tenant(words.positional[0]);
  return cli::WithStore<AdminChannelStore>(command, words, [&](AdminChannelStore& store) {
    std::optional<TenantInfo> t = store.ShowTenant(tenant);
    if (!t) {
      std::cerr << command << ": no tenant named or numbered '" << OneLine(tenant) << "'\n";
      return kExitFailure;
    }
    if (words.Has("--json")) {
      nlohmann::ordered_json out = {{"id", t->id},
                                    {"name", t->name},
                                    {"tier", t->tier},
                                    {"created_at", t->created_at},
                                    {"channels", t->channels},
                                    {"jobs",
                                     {{"available", t->available},
                                      {"scheduled", t->scheduled},
                                      {"executing", t->executing},
                                      {"parked", t->parked}}}};
      std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
      return kExitOk;
    }
    std::cout << "tenant    " << OneLine(t->name) << " (id " << t->id << ")\n"
              << "tier      " << t->tier << "\n"
              << "created   " << t->created_at << "\n"
              << "channels  " << t->channels << "\n"
              << "jobs      " << t->available << " available, " << t->scheduled << " scheduled, "
              << t->executing << " executing, " << t->parked << " parked\n";
    return kExitOk;
  });
}

constexpr Subcommand kSubcommands[] = {
    {"add", "add --name NAME [--tier TIER] [--database URL]", "add a tenant (tier: default)",
     R"(Adds a tenant named NAME (1 to 200 characters, unique) on TIER (default: `default`), and
prints its id. TIER must exist in bulkhead.tiers.
)",
     RunAdd},
    {"show", "show TENANT [--json] [--database URL]", "a tenant's tier, channels and jobs",
     R"(Shows the tenant: id, name, tier, its number of channels, and its waiting jobs by state
(available, scheduled, executing, parked). --json prints one object with the keys id, name,
tier, created_at, channels and jobs {available, scheduled, executing, parked}.
)",
     RunShow},
    {"set-tier", "set-tier TENANT TIER [--database URL]",
     "move a tenant and its waiting deliveries to another tier",
     R"(Moves the tenant to TIER (one tier is one queue) together with its waiting deliveries,
available and parked, of all its channels, in one statement; parked ones stay parked. Deliveries
in flight finish where they are, and one that fails retries in the new tier. The nodes serving
TIER are woken. A tenant already on TIER is left there. TIER must exist in bulkhead.tiers (a
node registers the tiers it serves; `default` and `bulk` exist from the start).
)",
     RunSetTier},
};

const cli::SubcommandVerb& Verb() {
  static const cli::SubcommandVerb verb{"bulkhead tenant", kSubcommands, kTenantNote};
  return verb;
}

}  // namespace

bool IsTierName(std::string_view word) {
  if (word.empty() || word.size() > 63 || word[0] < 'a' || word[0] > 'z') return false;
  for (char c : word) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

int RunTenantCommand(std::span<const std::string_view> args) { return Verb().Dispatch(args); }

}  // namespace bulkhead
