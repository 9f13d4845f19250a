#include "channel_command.h"

#include <algorithm>
#include <charconv>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <variant>
#include <vector>

#include "admin_channel_store.h"
#include "channel_words.h"
#include "cli_common.h"
#include "exit_codes.h"
#include "webhook_signature.h"
#include "webhook_url.h"

namespace bulkhead {
namespace {

using cli::Deliveries;
using cli::kDefaultKeepOldS;
using cli::ParseEventTypes;
using cli::ParseKeepOld;
using cli::ParseRate;
using cli::ReadSecretFile;
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
  std::optional<int64_t> channel = cli::TakeChannel(command, *words);
  if (!channel) return kExitUsage;
  return *channel;
}

int NoSuchChannel(const std::string& command, int64_t channel) {
  std::cerr << command << ": no channel with id " << channel << "\n";
  return kExitFailure;
}

// The channel's row in `bulkhead breakers`, if it has one (breaker not closed, or paused).
std::optional<BreakerRow> FindBreakerRow(AdminChannelStore& store, int64_t channel) {
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
  return cli::WithStore<AdminChannelStore>(command, words, [&](AdminChannelStore& store) {
    std::optional<ChannelChange> change = store.PauseChannel(channel);
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
  return cli::WithStore<AdminChannelStore>(command, words, [&](AdminChannelStore& store) {
    std::optional<ChannelChange> change = store.ResumeChannel(channel);
    if (!change) return NoSuchChannel(command, channel);
    if (change->before == "disabled") {
      // Resuming would send the backlog of a channel enqueue refuses: enable comes first.
      std::cerr << command << ": channel " << channel << " is disabled ("
                << cli::OneLine(change->reason) << "); it stays paused with "
                << Deliveries(change->jobs, "parked")
                << ": enable it first with `bulkhead channel enable " << channel
                << "`, then resume it\n";
      return kExitFailure;
    }
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

// The channel's waiting jobs by state, as one phrase.
std::string Backlog(const ChannelInfo& c) {
  return std::to_string(c.available) + " available, " + std::to_string(c.scheduled) +
         " scheduled, " + std::to_string(c.executing) + " executing, " + std::to_string(c.parked) +
         " parked";
}

// A rate as an operator reads it: the shortest decimal that gives it back ("50", "0.5").
std::string RateNumber(double rate) {
  char text[64];
  auto [end, ec] = std::to_chars(text, text + sizeof text, rate, std::chars_format::fixed);
  if (ec != std::errc()) return std::to_string(rate);
  return std::string(text, end);
}

// `channel show`'s and `channel set`'s words for a channel's subscriptions and rate limit.
std::string EventTypesText(const std::optional<std::vector<std::string>>& types) {
  if (!types) return "all";
  if (types->empty()) return "none";
  std::string text;
  for (const std::string& type : *types) {
    if (!text.empty()) text += ", ";
    text += cli::OneLine(type);
  }
  return text;
}
std::string RateText(const std::optional<double>& rate) {
  return rate ? RateNumber(*rate) + "/s" : "none";
}

int RunAdd(const Subcommand& sub, std::span<const std::string_view> args) {
  const std::string command = Verb().CommandName(sub);
  auto parsed = cli::Parse(
      command, args,
      {.options = {{"--tenant", "a tenant (name or id)"}, {"--url", "a URL"}}, .max_positional = 0},
      [&] { Verb().PrintHelp(sub); });
  if (const int* exit_code = std::get_if<int>(&parsed)) return *exit_code;
  const cli::Words& words = std::get<cli::Words>(parsed);
  std::optional<std::string> tenant = words.Value("--tenant");
  std::optional<std::string> url = words.Value("--url");
  if (!tenant) return cli::UsageError(command, "missing --tenant TENANT");
  if (!url) return cli::UsageError(command, "missing --url URL");
  if (!IsWebhookUrl(*url)) {
    return cli::UsageError(command,
                           "--url must be an http:// or https:// URL without spaces, not '" +
                               cli::OneLine(*url) + "'");
  }
  return cli::WithStore<AdminChannelStore>(command, words, [&](AdminChannelStore& store) {
    std::optional<NewChannel> added = store.AddChannel(*tenant, *url);
    if (!added) {
      std::cerr << command << ": no tenant named or numbered '" << cli::OneLine(*tenant) << "'\n";
      return kExitFailure;
    }
    // The secret is printed here and nowhere else: `channel show` never prints it.
    std::cout << "channel " << added->id << " added for tenant " << cli::OneLine(added->tenant)
              << " (tier " << added->tier << ")\n"
              << "secret " << added->secret
              << "\nThe secret is shown only this once: give it to the receiver now.\n";
    return kExitOk;
  });
}

int RunShow(const Subcommand& sub, std::span<const std::string_view> args) {
  const std::string command = Verb().CommandName(sub);
  auto parsed = cli::Parse(command, args, {.options = {cli::kJsonFlag}, .max_positional = 1},
                           [&] { Verb().PrintHelp(sub); });
  if (const int* exit_code = std::get_if<int>(&parsed)) return *exit_code;
  const cli::Words& words = std::get<cli::Words>(parsed);
  std::optional<int64_t> channel = cli::TakeChannel(command, words);
  if (!channel) return kExitUsage;
  return cli::WithStore<AdminChannelStore>(command, words, [&](AdminChannelStore& store) {
    std::optional<ChannelInfo> c = store.ShowChannel(*channel);
    if (!c) return NoSuchChannel(command, *channel);
    if (words.Has("--json")) {
      nlohmann::ordered_json out = {
          {"id", c->id},
          {"tenant_id", c->tenant_id},
          {"tenant", c->tenant},
          {"tier", c->tier},
          {"url", c->url},
          {"created_at", c->created_at},
          {"enabled", c->enabled},
          {"disabled_reason",
           c->enabled ? nlohmann::ordered_json() : nlohmann::ordered_json(c->disabled_reason)},
          {"paused", c->paused},
          {"breaker",
           {{"state", c->breaker_state},
            {"trips", c->breaker_trips},
            {"reason", c->breaker_state == "closed" ? "" : c->breaker_reason}}},
          {"jobs",
           {{"available", c->available},
            {"scheduled", c->scheduled},
            {"executing", c->executing},
            {"parked", c->parked}}},
          {"old_secrets", c->old_secrets},
          {"old_secrets_until", c->old_secrets == 0 ? nlohmann::ordered_json()
                                                    : nlohmann::ordered_json(c->old_secrets_until)},
          {"event_types", c->limits.event_types ? nlohmann::ordered_json(*c->limits.event_types)
                                                : nlohmann::ordered_json()},
          {"rate_limit_per_s", c->limits.rate_limit_per_s
                                   ? nlohmann::ordered_json(*c->limits.rate_limit_per_s)
                                   : nlohmann::ordered_json()},
          {"ordering",
           {{"held", c->held}, {"held_capped", c->held_capped}, {"held_keys", c->held_keys}}}};
      std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
      return kExitOk;
    }
    std::cout << "channel   " << c->id << "\n"
              << "tenant    " << cli::OneLine(c->tenant) << " (id " << c->tenant_id << ", tier "
              << c->tier << ")\n"
              << "url       " << cli::OneLine(c->url) << "\n"
              << "created   " << c->created_at << "\n"
              << "enabled   " << (c->enabled ? "yes" : "no: " + cli::OneLine(c->disabled_reason))
              << "\n"
              << "paused    " << (c->paused ? "yes" : "no") << "\n"
              << "breaker   " << c->breaker_state;
    if (c->breaker_state != "closed") {
      std::cout << " (trips " << c->breaker_trips << ": " << cli::OneLine(c->breaker_reason) << ")";
    }
    std::cout << "\njobs      " << Backlog(*c) << "\n"
              << "secrets   current";
    if (c->old_secrets > 0) {
      // How many and until when, never which: the text of a secret is printed only when made.
      std::cout << " + " << c->old_secrets << " old (rotation), signed with until "
                << c->old_secrets_until;
    } else {
      std::cout << " only";
    }
    std::cout << "\n"
              << "events    " << EventTypesText(c->limits.event_types) << "\n"
              << "rate      " << RateText(c->limits.rate_limit_per_s) << "\n"
              << "ordering  ";
    if (c->held == 0) {
      std::cout << "nothing held";
    } else {
      // Held deliveries are among the scheduled and parked jobs above, not beside them.
      std::cout << (c->held_capped ? "over " : "") << Deliveries(c->held, "held") << " (of the "
                << "scheduled and parked) waiting on " << (c->held_capped ? "at least " : "")
                << c->held_keys << (c->held_keys == 1 ? " ordering key" : " ordering keys");
    }
    std::cout << "\n";
    return kExitOk;
  });
}

int RunDisable(const Subcommand& sub, std::span<const std::string_view> args) {
  const std::string command = Verb().CommandName(sub);
  auto parsed =
      cli::Parse(command, args, {.options = {{"--reason", "a reason"}}, .max_positional = 1},
                 [&] { Verb().PrintHelp(sub); });
  if (const int* exit_code = std::get_if<int>(&parsed)) return *exit_code;
  const cli::Words& words = std::get<cli::Words>(parsed);
  std::optional<int64_t> channel = cli::TakeChannel(command, words);
  if (!channel) return kExitUsage;
  std::optional<std::string> reason = words.Value("--reason");
  if (!reason) return cli::UsageError(command, "missing --reason TEXT (say who and why)");
  if (reason->empty() || reason->size() > 500) {
    return cli::UsageError(command, "--reason must be 1 to 500 characters");
  }
  return cli::WithStore<AdminChannelStore>(command, words, [&](AdminChannelStore& store) {
    std::optional<ChannelChange> change = store.DisableChannel(*channel, *reason);
    if (!change) return NoSuchChannel(command, *channel);
    std::cout << "channel " << *channel
              << (change->before == "disabled" ? " was already disabled (reason updated)"
                                               : " disabled")
              << ": enqueue refuses it; " << Deliveries(change->jobs, "waiting")
              << " parked and kept until it is enabled and resumed\n";
    return kExitOk;
  });
}

int RunEnable(const Subcommand& sub, std::span<const std::string_view> args) {
  cli::Words words;
  auto parsed = ParseChannel(sub, args, &words);
  if (const int* exit_code = std::get_if<int>(&parsed)) return *exit_code;
  const int64_t channel = std::get<int64_t>(parsed);
  const std::string command = Verb().CommandName(sub);
  return cli::WithStore<AdminChannelStore>(command, words, [&](AdminChannelStore& store) {
    std::optional<ChannelChange> change = store.EnableChannel(channel);
    if (!change) return NoSuchChannel(command, channel);
    std::cout << "channel " << channel
              << (change->before == "enabled" ? " was not disabled" : " enabled")
              << ": enqueue accepts it";
    if (change->jobs > 0) {
      std::cout << "; " << Deliveries(change->jobs, "parked")
                << " wait until `bulkhead channel resume " << channel << "` (or cancel them)";
    }
    std::cout << "\n";
    return kExitOk;
  });
}

int RunRotateSecret(const Subcommand& sub, std::span<const std::string_view> args) {
  const std::string command = Verb().CommandName(sub);
  // A secret typed in the wrong place (as CHANNEL, or after it) must not come back in a usage
  // error, which cli::Parse would quote: count the positional words first, and never quote one
  // here. The same scan refuses the old --secret VALUE: by the time it is read the secret is in
  // the process list and the shell's history already, and a warning would let scripts go on
  // putting it there.
  size_t positional = 0;
  bool options_ended = false;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (arg == "-h" || arg == "--help") break;  // cli::Parse prints the help
    if (!options_ended && arg == "--") {
      options_ended = true;
    } else if (!options_ended && (arg == "--secret" || arg.starts_with("--secret="))) {
      return cli::UsageError(command,
                             "--secret would put the secret in the process list and the shell's "
                             "history; give it with --secret-file FILE, or --secret-file - to "
                             "read it from stdin (the value is not repeated here)");
    } else if (!options_ended && arg.starts_with("--")) {
      if (arg.find('=') == std::string_view::npos &&
          (arg == "--secret-file" || arg == "--keep-old" || arg == "--database" ||
           arg == "--config")) {
        ++i;  // its value
      }
    } else if (++positional > 1) {
      return cli::UsageError(command,
                             "takes one CHANNEL; a new secret goes in --secret-file (the extra "
                             "word is not repeated here)");
    }
  }
  auto parsed =
      cli::Parse(command, args,
                 {.options = {{"--secret-file", "a file holding the secret (- for stdin)"},
                              {"--keep-old", "a duration"}},
                  .max_positional = 1},
                 [&] { Verb().PrintHelp(sub); });
  if (const int* exit_code = std::get_if<int>(&parsed)) return *exit_code;
  const cli::Words& words = std::get<cli::Words>(parsed);
  // The word is not quoted back: it may be a secret typed in the wrong place.
  std::optional<int64_t> channel = cli::TakeChannel(command, words, /*quote_word=*/false);
  if (!channel) return kExitUsage;
  int64_t keep_s = kDefaultKeepOldS;
  if (std::optional<std::string> keep = words.Value("--keep-old")) {
    std::optional<int64_t> parsed_keep = ParseKeepOld(*keep);
    if (!parsed_keep) {
      return cli::UsageError(command,
                             "--keep-old must be 0 or a duration like 90s, 15m, 24h, 7d, "
                             "not '" +
                                 cli::OneLine(*keep) + "'");
    }
    keep_s = *parsed_keep;
  }
  // Read last, once every word is known good: stdin is read only by a command that will run.
  std::optional<std::string> secret;
  if (std::optional<std::string> file = words.Value("--secret-file")) {
    auto read = ReadSecretFile(command, *file);
    if (const int* exit_code = std::get_if<int>(&read)) return *exit_code;
    secret = std::get<std::string>(std::move(read));
  }
  return cli::WithStore<AdminChannelStore>(command, words, [&](AdminChannelStore& store) {
    SecretRotation r = store.RotateSecret(*channel, secret.value_or(""), keep_s);
    if (r.outcome == SecretRotation::kNoSuchChannel) {
      return NoSuchChannel(command, *channel);
    }
    if (r.outcome == SecretRotation::kSameSecret) {
      std::cerr << command << ": the secret of --secret-file is already channel " << *channel
                << "'s current secret; nothing changed\n";
      return kExitFailure;
    }
    std::cout << "channel " << *channel << ": secret rotated; ";
    if (r.old_secrets > 0) {
      std::cout << "requests are signed with the new secret and " << r.old_secrets << " old "
                << (r.old_secrets == 1 ? "one" : "ones") << " until " << r.old_secrets_until
                << "\n";
    } else {
      std::cout << "old secrets retired: requests are signed with the new secret only\n";
    }
    if (secret) {
      std::cout << "secret as given with --secret-file\n";
    } else {
      // The secret is printed here and nowhere else: `channel show` never prints it.
      std::cout << "secret " << r.secret
                << "\nThe secret is shown only this once: give it to the receiver now.\n";
    }
    return kExitOk;
  });
}

int RunSet(const Subcommand& sub, std::span<const std::string_view> args) {
  const std::string command = Verb().CommandName(sub);
  auto parsed = cli::Parse(command, args,
                           {.options = {{"--event-types", "a list of event types"},
                                        {"--all-event-types", nullptr},
                                        {"--no-event-types", nullptr},
                                        {"--rate-limit", "a number of requests a second"},
                                        {"--no-rate-limit", nullptr}},
                            .max_positional = 1},
                           [&] { Verb().PrintHelp(sub); });
  if (const int* exit_code = std::get_if<int>(&parsed)) return *exit_code;
  const cli::Words& words = std::get<cli::Words>(parsed);
  std::optional<int64_t> channel = cli::TakeChannel(command, words);
  if (!channel) return kExitUsage;
  const std::optional<std::string> types_word = words.Value("--event-types");
  const std::optional<std::string> rate_word = words.Value("--rate-limit");
  const int types_given = (types_word ? 1 : 0) + (words.Has("--all-event-types") ? 1 : 0) +
                          (words.Has("--no-event-types") ? 1 : 0);
  const int rate_given = (rate_word ? 1 : 0) + (words.Has("--no-rate-limit") ? 1 : 0);
  if (types_given > 1) {
    return cli::UsageError(command,
                           "give one of --event-types, --all-event-types and --no-event-types");
  }
  if (rate_given > 1)
    return cli::UsageError(command, "give --rate-limit or --no-rate-limit, not both");
  if (types_given + rate_given == 0) {
    return cli::UsageError(command,
                           "nothing to set: give --event-types, --all-event-types, "
                           "--no-event-types, --rate-limit or --no-rate-limit");
  }
  ChannelLimits limits;
  if (types_word) {
    limits.event_types = ParseEventTypes(command, *types_word);
    if (!limits.event_types) return kExitUsage;
  } else if (words.Has("--no-event-types")) {
    limits.event_types.emplace();  // subscribed to none: publish skips the channel
  }
  if (rate_word) {
    limits.rate_limit_per_s = ParseRate(command, *rate_word);
    if (!limits.rate_limit_per_s) return kExitUsage;
  }
  return cli::WithStore<AdminChannelStore>(command, words, [&](AdminChannelStore& store) {
    std::optional<ChannelLimits> now =
        store.SetChannelLimits(*channel, limits, types_given > 0, rate_given > 0);
    if (!now) return NoSuchChannel(command, *channel);
    // Both settings as they are now, the one not given included, so the line is the whole
    // answer to "what does this channel take".
    std::cout << "channel " << *channel << ": event types " << EventTypesText(now->event_types)
              << "; rate limit " << RateText(now->rate_limit_per_s) << "\n";
    return kExitOk;
  });
}

constexpr Subcommand kSubcommands[] = {
    {"add", "add --tenant TENANT --url URL [--database URL]",
     "add a channel; prints its id and secret once",
     R"(Adds a channel (an endpoint) for TENANT (a tenant's name, or its id when no tenant has that
name) with a fresh Standard Webhooks secret, and prints the channel's id and the secret. The
secret is shown only this once: `channel show` never prints it. URL must be http:// or
https://.
)",
     RunAdd},
    {"show", "show CHANNEL [--json] [--database URL]", "a channel's settings, breaker and jobs",
     R"(Shows the channel: tenant and tier, URL, enabled (or why it is disabled), paused, its
breaker, its waiting jobs by state (available, scheduled, executing, parked), how many old
secrets (after a rotate-secret) are still signed with and until when, its event types ("all"
or "none" or the list), its rate limit ("none" or N/s) and its ordering state. Never a secret.
--json prints one object with the keys id, tenant_id, tenant, tier, url, created_at,
enabled, disabled_reason (null while enabled), paused, breaker {state, trips, reason},
jobs {available, scheduled, executing, parked}, old_secrets (a count), old_secrets_until
(null when there is none), event_types (an array; null: every type), rate_limit_per_s
(null: no limit) and ordering {held, held_capped, held_keys}.
The ordering line counts the deliveries held behind an earlier live delivery of their
ordering key (they are among the scheduled and parked jobs, due when it ends) and the keys
they wait on, up to 100000 ("over" and held_capped beyond that).
)",
     RunShow},
    {"disable", "disable CHANNEL --reason TEXT [--database URL]",
     "refuse new deliveries; hold the backlog parked",
     R"(Disables the channel: bulkhead.enqueue refuses new deliveries to it with the reason
(SQLSTATE 55000). Its waiting backlog is not dropped: the channel is also paused, so the
backlog is parked in the same statement and kept. Deliveries in flight finish; one that fails
waits parked. Undo with `channel enable` and then `channel resume` (or cancel the backlog with
`bulkhead cancel --channel CHANNEL`).
)",
     RunDisable},
    {"enable", "enable CHANNEL [--database URL]", "accept new deliveries again",
     R"(Enables the channel: bulkhead.enqueue accepts it again. The pause that `disable` set stays,
and with it the parked backlog, which may be stale by now: send it with `channel resume`, or
cancel it with `bulkhead cancel --channel CHANNEL`. New deliveries wait parked until resumed.
)",
     RunEnable},
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
`bulkhead breaker reset CHANNEL`. A disabled channel is refused (exit 1) and stays paused,
its backlog parked: `channel enable` it first, then resume it.
)",
     RunResume},
    {"rotate-secret",
     "rotate-secret CHANNEL [--secret-file FILE] [--keep-old DURATION] [--database URL]",
     "a new secret; the old one is still signed with for a window",
     R"(Gives the channel a new Standard Webhooks secret: a fresh one from bulkhead.new_secret(),
printed once on stdout (give it to the receiver), or the one read from --secret-file FILE
(- reads stdin; whsec_ and padded standard base64 of a 24- to 64-byte key, one newline after
it allowed; not printed back). A secret is never taken as a word of the command line, where
ps and the shell's history would show it: --secret VALUE is refused. The old secret is not
dropped at once: for --keep-old DURATION (default 24h; 90s, 15m, 24h, 7d) every request is
signed with the new secret and the old one, space-separated in webhook-signature, so a
receiver that knows either verifies it; switch the receiver within that window. --keep-old 0
drops the old secret, and any older one still in its window, at once. Old secrets of earlier
rotations keep their own windows. `channel show` says how many old secrets are still signed
with and until when.
)",
     RunRotateSecret},
    {"set",
     "set CHANNEL [--event-types TYPE,TYPE... | --all-event-types | --no-event-types] "
     "[--rate-limit N | --no-rate-limit] [--database URL]",
     "a channel's subscriptions and rate limit",
     R"(Sets what bulkhead.publish delivers to the channel and how fast the fleet sends to it;
what is not given stays as it is. --event-types takes the event type names, comma-separated
(spaces around a name are dropped, a name given twice is kept once; each 1 to 255 characters,
an empty one is refused): publish delivers an event to the channel only when its type is one
of them. --all-event-types subscribes it to every type (the default of a new channel);
--no-event-types to none, so publish skips it (bulkhead.enqueue still delivers to it).
--rate-limit N caps the requests a second to the channel across the whole fleet (above 0,
at most 1000000; 0.5 is one every two seconds); the jobs over it wait, unsent and with their
attempt unspent (bulkhead_rate_limited_total). --no-rate-limit lifts it. Prints both
settings as they are afterwards. An unknown channel exits 1.
)",
     RunSet},
};

const cli::SubcommandVerb& Verb() {
  static const cli::SubcommandVerb verb{"bulkhead channel", kSubcommands,
                                        "CHANNEL is a channel id (bulkhead.channels.id).\n"};
  return verb;
}

}  // namespace

int RunChannelCommand(std::span<const std::string_view> args) { return Verb().Dispatch(args); }

}  // namespace bulkhead
