#include "poison_quarantine.h"

#include "logger.h"
#include "storable_text.h"
#include "store_failure.h"

namespace bulkhead {

PoisonQuarantine::PoisonQuarantine(Options options) : options_(std::move(options)) {}

bool PoisonQuarantine::Take(const std::exception& failure, const std::string& text,
                            nlohmann::json fields,
                            const std::function<void(const std::string& storable)>& retry) {
  const std::string sqlstate = SqlState(failure);
  std::string storable = StorableText(text);
  storable.append(" [the original ").append(options_.text).append(" could not be stored");
  if (!sqlstate.empty()) storable.append(": SQLSTATE ").append(sqlstate);
  storable.append("]");
  bool recorded = false;
  std::string retry_error;
  try {
    retry(storable);
    recorded = true;
  } catch (const std::exception& e) {
    if (!IsDataFailure(e)) throw;  // the database went: the caller keeps the item
    retry_error = FirstLine(e.what());
  }
  ++count_;
  if (options_.metrics) options_.metrics->quarantined(options_.writer, recorded).Increment();
  fields["sqlstate"] = sqlstate;
  fields["error"] = FirstLine(failure.what());
  fields["outcome"] = recorded ? "recorded" : "dropped";
  fields["detail"] = recorded ? options_.recorded_detail : options_.dropped_detail;
  if (!recorded) fields["retry_error"] = retry_error;
  Log(LogLevel::kError, options_.event, fields);
  return recorded;
}

}  // namespace bulkhead
