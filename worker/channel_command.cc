#include "channel_command.h"

#include <cctype>
#include <charconv>
#include <iostream>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <variant>

#include "cli_common.h"
#include "exit_codes.h"
#include "job_store.h"

namespace bulkhead {
namespace {

using cli::Deliveries;
using cli::Subcommand;

// `bulkhead channel` and its table of subcommands (defined after the handlers).
const cli::SubcommandVerb& Verb();

// The words of a subcommand that takes one CHANNEL and [--database URL], in any order: the
// channel, or the exit code to return at once (help printed, or a usage error).
std::variant<int64_t, int> ParseChannel(const Subcommand& sub,
                                        std::span<const std::string_view> args, cli::Words* words) {
  const std::string command = Verb().CommandName(sub);
  auto parsed = cli::Parse(command, args, {.options = {}, .max_positional = 1},
                           [&] { Verb().PrintHelp(sub); });
  if (const int* exit_code = std::get_if<int>(&parsed)) return *exit_code;
  *words = std::get<cli::Words>(std::move(parsed));
  if (words->positional.empty()) return cli::UsageError(command, "missing CHANNEL");
  std::optional<int64_t> channel = cli::ParseId(words->positional[0]);
  if (!channel) {
    return cli::UsageError(command, "CHANNEL must be a positive integer (a channel id), not '" +
                                        cli::OneLine(words->positional[0]) + "'");
  }
  return *channel;
}

int NoSuchChannel(const std::string& command, int64_t channel) {
  std::cerr << command << ": no channel with id " << channel << "\n";
  return kExitFailure;
}

// The channel's row in `bulkhead breakers`, if it has one (breaker not closed, or paused).
std::optional<JobStore::BreakerRow> FindBreakerRow(JobStore& store, int64_t channel) {
  for (auto& row : store.ListBreakers()) {
    if (row.channel == channel) return std::move(row);
  }
  return std::nullopt;
}

int RunPause(const Subcommand& sub, std::span<const std::string_view> args) {
  cli::Words words;
  auto parsed = ParseChannel(sub, args, &words);
  if (const int* exit_code = std::get_if<int>(&parsed)) return *exit_code;
  const int64_t channel = std::get<int64_t>(parsed);
  const std::string command = Verb().CommandName(sub);
  return cli::WithStore(command, words, [&](JobStore& store) {
    std::optional<JobStore::ChannelChange> change = store.PauseChannel(channel);
    if (!change) return NoSuchChannel(command, channel);
    std::cout << "channel " << channel;
    if (change->before == "paused") {
      // The statement parks stragglers anyway: a job made available meanwhile (a retry).
      std::cout << " already paused";
      if (change->jobs > 0)
        std::cout << "; " << Deliveries(change->jobs, "more waiting") << " parked";
    } else if (change->jobs > 0) {
      std::cout << " paused: " << Deliveries(change->jobs, "waiting")
                << " parked until it is resumed";
    } else {
      std::cout << " paused: nothing was waiting; new deliveries are parked until it is resumed";
    }
    std::cout << "\n";
    return kExitOk;
  });
}

int RunResume(const Subcommand& sub, std::span<const std::string_view> args) {
  cli::Words words;
  auto parsed = ParseChannel(sub, args, &words);
  if (const int* exit_code = std::get_if<int>(&parsed)) return *exit_code;
  const int64_t channel = std::get<int64_t>(parsed);
  const std::string command = Verb().CommandName(sub);
  return cli::WithStore(command, words, [&](JobStore& store) {
    std::optional<JobStore::ChannelChange> change = store.ResumeChannel(channel);
    if (!change) return NoSuchChannel(command, channel);
    const bool was_paused = change->before == "paused";
    std::cout << "channel " << channel << (was_paused ? " resumed" : " was not paused");
    if (change->jobs > 0) {
      std::cout << (was_paused ? ": " : "; ") << Deliveries(change->jobs, "parked")
                << " back in the queue";
    } else if (auto row = FindBreakerRow(store, channel); row && row->state != "closed") {
      // ResumeChannel unparks nothing while the breaker is not closed: say why.
      std::cout << (was_paused ? ", but" : ";") << " its breaker is " << row->state << ", so its "
                << Deliveries(row->parked, "parked")
                << " stay parked until the breaker's probe succeeds (or `bulkhead breaker reset "
                << channel << "`)";
    } else if (was_paused) {
      std::cout << ": nothing was parked";
    }
    std::cout << "\n";
    return kExitOk;
  });
}

constexpr Subcommand kSubcommands[] = {
    {"pause", "pause CHANNEL [--database URL]", "hold a channel's deliveries, parked",
     R"(Holds the channel's deliveries: its waiting backlog (due or not) is parked at once, and
deliveries enqueued while it is paused are inserted parked. Deliveries already in flight
finish; one that fails waits parked for its retry. The circuit breaker keeps its state
meanwhile but sends no new probe. Pausing a paused channel changes nothing.
)",
     RunPause},
    {"resume", "resume CHANNEL [--database URL]", "lift the hold; the parked backlog returns",
     R"(Lifts the hold: the channel's parked backlog returns to the queue in one statement, behind
fresh deliveries (priority 3), with its retry times kept. If the channel's breaker is not
closed, the backlog stays parked until the breaker's probe succeeds or an operator runs
`bulkhead breaker reset CHANNEL`.
)",
     RunResume},
};

const cli::SubcommandVerb& Verb() {
  static const cli::SubcommandVerb verb{"bulkhead channel", kSubcommands,
                                        "CHANNEL is a channel id (bulkhead.channels.id).\n"};
  return verb;
}

}  // namespace

int RunChannelCommand(std::span<const std::string_view> args) { return Verb().Dispatch(args); }

}  // namespace bulkhead
